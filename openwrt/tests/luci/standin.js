// A small stand-in for the LuCI runtime, enough to load the views of
// luci-app-ripe-cidr-collector in a plain browser page (tests/it/luci.rs):
// the module loader with 'require' directives, E(), _(), String.format, L.bind,
// L.resolveDefault, view.extend, rpc.declare (over GET /ubus, which the test answers
// by running the real rpcd plugin, after checking the ACL file grants the method),
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

	window._ = function(s) { return s; };
	window.N_ = window._;

	// E() as luci-base's luci.js builds elements (dom.create, dom.attr, dom.append),
	// traps included, so that a view that falls into one fails here as it would in
	// LuCI: the second argument is the attributes whenever it is a non-array object
	// (a DOM node too); a tag starting with '<' is parsed as markup; of the children,
	// an array's items become nodes or text nodes (null ones the text "null"), a
	// function is called with the element, a node is appended, and anything else,
	// a string in particular, is set as innerHTML.
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
	var modules = {
		view: {
			extend: function(proto) { return proto; }
		},
		rpc: {
			declare: function(o) {
				return function() {
					var args = arguments, params = {};
					(o.params || []).forEach(function(p, i) {
						if (args[i] !== undefined) params[p] = args[i];
					});
					var q = 'object=' + encodeURIComponent(o.object) + '&method=' + encodeURIComponent(o.method) +
						'&params=' + encodeURIComponent(JSON.stringify(params));
					return fetch('/ubus?' + q).then(function(r) {
						if (!r.ok) throw new Error('ubus ' + o.object + ' ' + o.method + ': HTTP ' + r.status);
						return r.json();
					}).then(function(res) {
						var key = Object.keys(o.expect || { '': null })[0];
						var def = o.expect ? o.expect[key] : null;
						var v = key === '' ? res : (res || {})[key];
						return v === undefined ? def : v;
					});
				};
			}
		},
		ui: {
			// As LuCI: the title goes into an h4, the children through dom.append.
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
					var o = E('option', { 'value': c[0] }, c[1]);
					o.selected = c[0] === cur;
					return o;
				}));
			}),
			DynamicList: sub(function(v) {
				var name = this.name;
				return E('div', { 'class': 'cbi-dynlist' }, [].concat(v || []).map(function(x) {
					return E('input', { 'type': 'text', 'name': name, 'value': x });
				}));
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
		f.Map.prototype.render = function() {
			var map = this;
			return fetch('/uci/' + map.config).then(function(r) { return r.text(); }).then(function(text) {
				var data = parseUci(text);
				return E('div', { 'class': 'cbi-map', 'data-config': map.config }, [
					E('h2', map.title), E('div', { 'class': 'cbi-map-descr' }, map.descr)
				].concat(map.sections.map(function(s) {
					var values = data[s.sid] || {};
					return E('div', { 'class': 'cbi-section', 'data-section': s.sid }, s.options.map(function(o) {
						return E('div', { 'class': 'cbi-value', 'data-name': o.name }, [
							E('label', { 'class': 'cbi-value-title' }, o.title),
							o.widget(values[o.name]),
							o.descr ? E('div', { 'class': 'cbi-value-description' }, o.descr) : null
						]);
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

	window.standin = {
		polls: polls,
		run: function(path) {
			return loadView(path).then(function(view) {
				return Promise.resolve(view.load ? view.load() : null).then(function(data) {
					return view.render(data);
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
