// A small stand-in for the LuCI runtime, enough to load the views of
// luci-app-ripe-cidr-collector in a plain browser page (tests/it/luci.rs):
// the module loader with 'require' directives, E(), _() with LuCI's translation
// lookup (window.TR, keyed by the SuperFastHash of the whitespace-normalised string,
// as luci-base's cbi.js computes it; the test serves the catalog its .lmo holds),
// String.format, L.bind, L.url, L.resolveDefault, baseclass.extend, view.extend,
// rpc.declare (over GET /ubus, which the test answers as rpcd and the plugin would,
// after checking the ACL file grants the method; `reject` as LuCI's rpc.js),
// ui.addNotification, poll.add (kept, never run by a timer) and a form.Map that
// renders the options of one named section from the shipped UCI file.
// What it does not cover is listed in openwrt/README.md.
'use strict';

(function() {
	String.prototype.format = function() {
		var args = arguments, i = 0;
		return this.replace(/%([sd%])/g, function(m, c) {
			if (c === '%') return '%';
			var v = args[i++];
			return c === 'd' ? String(parseInt(v, 10)) : String(v);
		});
	};

	// SuperFastHash (Paul Hsieh) over the UTF-8 bytes, 8 hex digits: the key of a
	// translation in LuCI's catalog (po2lmo hashes the msgid the same way).
	function sfh(s) {
		var b = Array.from(new TextEncoder().encode(s)), n = b.length;
		if (!n)
			return null;
		var u16 = function(i) { return b[i] | (b[i + 1] << 8); };
		var s8 = function(i) { return b[i] > 127 ? b[i] - 256 : b[i]; };
		var h = n >>> 0, i = 0, t;
		for (var left = n >> 2; left > 0; left--, i += 4) {
			h = (h + u16(i)) >>> 0;
			t = ((u16(i + 2) << 11) ^ h) >>> 0;
			h = ((h << 16) ^ t) >>> 0;
			h = (h + (h >>> 11)) >>> 0;
		}
		switch (n & 3) {
		case 3:
			h = (h + u16(i)) >>> 0;
			h = (h ^ (h << 16)) >>> 0;
			h = (h ^ (s8(i + 2) << 18)) >>> 0;
			h = (h + (h >>> 11)) >>> 0;
			break;
		case 2:
			h = (h + u16(i)) >>> 0;
			h = (h ^ (h << 11)) >>> 0;
			h = (h + (h >>> 17)) >>> 0;
			break;
		case 1:
			h = (h + s8(i)) >>> 0;
			h = (h ^ (h << 10)) >>> 0;
			h = (h + (h >>> 1)) >>> 0;
		}
		h = (h ^ (h << 3)) >>> 0; h = (h + (h >>> 5)) >>> 0;
		h = (h ^ (h << 4)) >>> 0; h = (h + (h >>> 17)) >>> 0;
		h = (h ^ (h << 25)) >>> 0; h = (h + (h >>> 6)) >>> 0;
		return (0x100000000 + h).toString(16).slice(1);
	}

	window.TR = {};
	window._ = function(s) {
		var key = String(s).trim().replace(/[ \t\n]+/g, ' ');
		return window.TR[sfh(key)] || s;
	};
	window.N_ = window._;

	// E() as luci-base's luci.js builds elements (dom.create, dom.attr, dom.append),
	// traps included, so that a view that falls into one fails here as it would in
	// LuCI: the second argument is the attributes whenever it is a non-array object
	// (a DOM node too); a tag starting with '<' is parsed as markup; of the children,
	// an array's items become nodes or text nodes (null ones the text "null"), a
	// function is called with the element, a node is appended, and anything else,
	// a string in particular, LuCI sets as innerHTML. The views never give one (every
	// text a text node), so here that is an error, whatever the string holds.
	function append(node, kids) {
		if (Array.isArray(kids)) {
			kids.forEach(function(k) {
				node.appendChild(k instanceof Node ? k : document.createTextNode('' + k));
			});
		} else if (typeof kids === 'function') {
			append(node, kids(node));
		} else if (kids instanceof Node) {
			node.appendChild(kids);
		} else if (kids !== null && kids !== undefined) {
			node.innerHTML = '' + kids;
			throw new Error('E(' + node.tagName + '): a bare ' + typeof kids + ' child, parsed as HTML: ' + kids);
		}
	}

	window.E = function(tag, attrs, kids) {
		if (!(attrs instanceof Object) || Array.isArray(attrs)) {
			kids = attrs;
			attrs = null;
		}
		var e;
		if (tag instanceof Node) {
			e = tag;
		} else if (tag.charCodeAt(0) === 60) {
			var t = document.createElement('template');
			t.innerHTML = tag;
			e = t.content.firstChild;
		} else {
			e = document.createElement(tag);
		}
		Object.keys(attrs || {}).forEach(function(k) {
			var v = attrs[k];
			if (v == null) return;
			if (typeof v === 'function') e.addEventListener(k, v);
			else if (typeof v === 'object') e.setAttribute(k, JSON.stringify(v));
			else e.setAttribute(k, v);
		});
		append(e, kids);
		return e;
	};

	var polls = [];
	// rpc.js's getStatusText for the codes rpcd gives.
	var STATUS = { 2: 'Invalid argument', 3: 'Method not found', 4: 'Resource not found',
		5: 'No data received', 6: 'Permission denied', 7: 'Request timeout' };
	var kind = function(v) { return Object.prototype.toString.call(v); };
	// luci.js's L.raise, with which rpc.js rejects: the stack where it was raised is
	// appended to the message, a line "  at ..." per frame.
	var raise = function(type, msg) {
		var stack = [];
		try { throw new Error('stacktrace'); } catch (e2) { stack = (e2.stack || '').split(/\n/); }
		var e = new Error(msg);
		e.name = type;
		stack = stack.map(function(f) {
			f = f.replace(/(.*?)@(.+):(\d+):(\d+)/g, 'at $1 ($2:$3:$4)').trim();
			return f ? '  ' + f : '';
		});
		if (!/^  at /.test(stack[0])) stack.shift();
		if (/\braise /.test(stack[0])) stack.shift();
		if (/\berror /.test(stack[0])) stack.shift();
		if (stack.length) e.message += '\n' + stack.join('\n');
		throw e;
	};
	var modules = {
		baseclass: {
			extend: function(proto) { return proto; }
		},
		view: {
			extend: function(proto) { return proto; }
		},
		rpc: {
			// The test answers [status, reply] as a ubus JSON-RPC result: a non-zero
			// status rejects when the declaration says `reject: true` (rpc.js's
			// message) and otherwise becomes the value, which `expect` then replaces
			// with its default when the types differ.
			declare: function(o) {
				return function() {
					var args = arguments, params = {};
					(o.params || []).forEach(function(p, i) {
						if (args[i] !== undefined) params[p] = args[i];
					});
					var q = 'object=' + encodeURIComponent(o.object) + '&method=' + encodeURIComponent(o.method) +
						'&params=' + encodeURIComponent(JSON.stringify(params));
					return fetch('/ubus?' + q).then(function(r) {
						if (!r.ok) raise('RPCError', 'RPC call to ' + o.object + '/' + o.method + ' failed with HTTP error ' + r.status);
						return r.json();
					}).then(function(res) {
						if (o.reject && res[0] !== 0)
							raise('RPCError', 'RPC call to ' + o.object + '/' + o.method + ' failed with ubus code ' +
								res[0] + ': ' + (STATUS[res[0]] || 'Unknown error code'));
						var ret = res.length > 1 ? res[1] : res[0];
						for (var key in (o.expect || {})) {
							if (ret != null && key !== '')
								ret = ret[key];
							if (ret == null || kind(ret) !== kind(o.expect[key]))
								ret = o.expect[key];
							break;
						}
						return ret;
					});
				};
			}
		},
		ui: {
			// As LuCI's ui.js: E('h4', {}, title), so a string title is set as innerHTML
			// (an error here, as any bare string child), and the children through
			// dom.append.
			addNotification: function(title, kids, cls) {
				var n = E('div', { 'class': 'alert-message ' + (cls || '') });
				if (title != null) n.appendChild(E('h4', {}, title));
				append(n, kids);
				document.getElementById('notifications').appendChild(n);
				return n;
			}
		},
		poll: {
			add: function(fn, interval) { polls.push(fn); }
		},
		form: formModule()
	};

	window.L = {
		url: function(path) { return '/cgi-bin/luci/' + path; },
		bind: function(fn, self) {
			return fn.bind.apply(fn, [ self ].concat([].slice.call(arguments, 2)));
		},
		resolveDefault: function(p, def) {
			return Promise.resolve(p).catch(function() { return def; });
		}
	};

	// The shipped UCI file as {section: {option: value or [values]}}.
	function parseUci(text) {
		var out = {}, cur = null;
		text.split('\n').forEach(function(line) {
			var m = line.trim().match(/^(config|option|list)\s+(\S+)(?:\s+'([^']*)')?/);
			if (!m) return;
			if (m[1] === 'config') {
				cur = out[m[3]] = {};
			} else if (cur && m[1] === 'option') {
				cur[m[2]] = m[3];
			} else if (cur) {
				(cur[m[2]] = cur[m[2]] || []).push(m[3]);
			}
		});
		return out;
	}

	function formModule() {
		function Option(section, name, title, descr) {
			this.section = section; this.name = name; this.title = title; this.descr = descr;
			this.choices = [];
		}
		Option.prototype.value = function(k, label) { this.choices.push([ k, label ]); };
		// form.js's AbstractValue: an option without its own validate accepts anything.
		Option.prototype.validate = function(sid, v) { return true; };
		Option.prototype.widget = function(v) {
			return E('input', { 'type': 'text', 'name': this.name, 'value': v == null ? '' : v, 'placeholder': this.placeholder });
		};
		function sub(widget) {
			var C = function() { Option.apply(this, arguments); };
			C.prototype = Object.create(Option.prototype);
			if (widget) C.prototype.widget = widget;
			return C;
		}
		var f = {
			Value: sub(),
			Flag: sub(function(v) {
				var e = E('input', { 'type': 'checkbox', 'name': this.name });
				e.checked = v === '1';
				return e;
			}),
			ListValue: sub(function(v) {
				var cur = v == null ? this.default : v;
				return E('select', { 'name': this.name }, this.choices.map(function(c) {
					var o = E('option', { 'value': c[0] }, [ c[1] ]);
					o.selected = c[0] === cur;
					return o;
				}));
			}),
			// ui.js's DynamicList: the items, and the input that adds one (the one it
			// validates).
			DynamicList: sub(function(v) {
				var name = this.name;
				return E('div', { 'class': 'cbi-dynlist' }, [].concat(v || []).map(function(x) {
					return E('input', { 'type': 'text', 'name': name, 'value': x });
				}).concat([ E('div', { 'class': 'add-item' }, [ E('input', { 'type': 'text' }) ]) ]));
			}),
			NamedSection: function(map, sid, type) {
				this.map = map; this.sid = sid; this.type = type; this.options = [];
			}
		};
		f.NamedSection.prototype.option = function(Type, name, title, descr) {
			var o = new Type(this, name, title, descr);
			this.options.push(o);
			return o;
		};
		f.Map = function(config, title, descr) {
			this.config = config; this.title = title; this.descr = descr; this.sections = [];
		};
		f.Map.prototype.section = function(Type) {
			var s = Object.create(Type.prototype);
			Type.apply(s, [ this ].concat([].slice.call(arguments, 1)));
			this.sections.push(s);
			return s;
		};
		// As ui.js's addValidator with validation.js's Validator: the option's
		// validate(section_id, value) (form.js binds it so) runs on 'keyup' and 'blur'
		// of its text input; a result other than true marks the input
		// 'cbi-input-invalid' with the result as its data-tooltip. Datatypes are not
		// modelled.
		function validator(map, input, o, sid) {
			var check = function() {
				var r = o.validate(sid, input.value);
				input.classList.toggle('cbi-input-invalid', r !== true);
				if (r === true) input.removeAttribute('data-tooltip');
				else input.setAttribute('data-tooltip', String(r));
				return r === true ? null : r;
			};
			input.addEventListener('keyup', check);
			input.addEventListener('blur', check);
			map.checks.push(function() {
				var r = check();
				return r == null ? null : 'Option "%s" contains an invalid input value. %s'.format(o.title, r);
			});
			return input;
		}
		// form.js's Map.save, as the page's Save button (view.handleSave) runs it: an
		// option with an invalid value rejects it, and nothing is saved.
		f.Map.prototype.save = function() {
			var errors = (this.checks || []).map(function(c) { return c(); }).filter(function(e) { return e != null; });
			return errors.length ? Promise.reject(new TypeError(errors[0])) : Promise.resolve();
		};
		f.Map.prototype.render = function() {
			var map = this;
			// The Map the Save button would save (LuCI finds it through its .cbi-map).
			window.standin.map = map;
			map.checks = [];
			return fetch('/uci/' + map.config).then(function(r) { return r.text(); }).then(function(text) {
				var data = parseUci(text);
				return E('div', { 'class': 'cbi-map', 'data-config': map.config }, [
					E('h2', {}, [ map.title ]), E('div', { 'class': 'cbi-map-descr' }, [ map.descr ])
				].concat(map.sections.map(function(s) {
					var values = data[s.sid] || {};
					return E('div', { 'class': 'cbi-section', 'data-section': s.sid }, s.options.map(function(o) {
						var w = o.widget(values[o.name]);
						var text = w.matches('input[type=text]') ? w : w.querySelector('.add-item input');
						if (text) validator(map, text, o, s.sid);
						return E('div', { 'class': 'cbi-value', 'data-name': o.name }, [
							E('label', { 'class': 'cbi-value-title' }, [ o.title ]),
							w
						].concat(o.descr ? [ E('div', { 'class': 'cbi-value-description' }, [ o.descr ]) ] : []));
					}));
				})));
			});
		};
		return f;
	}

	// Loads view/<path>.js as LuCI does: its 'require' directives name the modules it
	// gets, its body returns the view.
	function loadView(path) {
		return fetch('/view/' + path + '.js').then(function(r) {
			if (!r.ok) throw new Error('no view ' + path);
			return r.text();
		}).then(function(src) {
			var names = [], m, re = /^\s*'require\s+([\w.]+)(?:\s+as\s+(\w+))?';/gm;
			while ((m = re.exec(src)) !== null) {
				if (!modules[m[1]]) throw new Error('the stand-in has no module ' + m[1]);
				names.push([ m[2] || m[1], modules[m[1]] ]);
			}
			var fn = new Function(names.map(function(n) { return n[0]; }).join(','), src + '\n//# sourceURL=' + path + '.js');
			return fn.apply(window, names.map(function(n) { return n[1]; }));
		});
	}

	// A status include is shown as LuCI's overview shows it: its title over what
	// render() gives.
	function show(view, node) {
		if (!view.title)
			return node;
		return E('div', { 'class': 'cbi-section' }, [ E('h3', {}, [ view.title ]), node ]);
	}

	window.standin = {
		polls: polls,
		sfh: sfh,
		// The catalog first (the query names the language, if any), then the view.
		run: function(path) {
			return fetch('/tr' + location.search).then(function(r) { return r.json(); }).then(function(tr) {
				window.TR = tr;
				return loadView(path);
			}).then(function(view) {
				return Promise.resolve(view.load ? view.load() : null).then(function(data) {
					return show(view, view.render(data));
				});
			}).then(function(node) {
				document.getElementById('view').appendChild(node);
				window.standinDone = true;
			}).catch(function(e) {
				window.standinDone = true;
				throw e;
			});
		}
	};
})();
