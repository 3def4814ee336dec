'use strict';
'require view';
'require rpc';
'require ui';
'require poll';

// Services -> IP prefix lists -> Status: what the daemon and the last run recorded,
// the sources of each group with their values, failures and last fetches, and "Check
// an address" (why an address is, or is not, routed). All of it comes from the rpcd
// plugin (`status --json`, `lookup --json`, `explain --json` of the CLI).
// Every text is given to E() inside an array, so it becomes a text node: LuCI sets
// innerHTML for a bare string child, and source names, feed URLs and failure texts
// come from outside. Colours are the theme's variables (with a fallback for themes
// without them). `reject: true`: a failed call (no access, plugin missing, timeout)
// is shown as an error, never taken for an empty answer.

var callStatus = rpc.declare({
	object: 'luci.ripe-cidr-collector',
	method: 'status',
	expect: { '': {} },
	reject: true
});

var callLookup = rpc.declare({
	object: 'luci.ripe-cidr-collector',
	method: 'lookup',
	params: [ 'address' ],
	expect: { '': {} },
	reject: true
});

var callExplain = rpc.declare({
	object: 'luci.ripe-cidr-collector',
	method: 'explain',
	params: [ 'address' ],
	expect: { '': {} },
	reject: true
});

var callCollect = rpc.declare({
	object: 'luci.ripe-cidr-collector',
	method: 'collect',
	expect: { '': {} },
	reject: true
});

var RED = 'color:var(--error-color-high, #c44)',
	AMBER = 'color:var(--warn-color-high, #c80)',
	GREEN = 'color:var(--success-color-high, #2a2)',
	GREY = 'color:var(--text-color-medium, #888)';

// A call that failed is shown as the plugin's refusals are.
function failed(e) {
	// The first line: LuCI's L.raise appends the stack ("\n  at ...") to the message.
	return { error: ((e && e.message) ? e.message : String(e)).split('\n')[0] };
}

function shown(kind, source) {
	return kind === 'asn' ? 'AS' + source : source;
}

function when(iso, none) {
	if (!iso)
		return none || _('never');
	var d = new Date(iso);
	return isNaN(d) ? iso : d.toLocaleString();
}

function daemonText(d) {
	var age = d.heartbeat ? (Date.now() - Date.parse(d.heartbeat)) / 1000 : NaN;
	if (d.heartbeat && d.pid && age <= 180)
		return _('running (pid %d), heartbeat %s').format(d.pid, when(d.heartbeat));
	if (d.heartbeat && d.pid)
		return _('not responding? last heartbeat %s').format(when(d.heartbeat));
	if (d.heartbeat)
		return _('stopped, last heartbeat %s').format(when(d.heartbeat));
	return _('no heartbeat recorded (is the service enabled and started?)');
}

// The kinds' names (the keys of `counts`), as the sources page names them.
var KIND = { asn: _('ASN'), fqdn: _('Host name'), feed: _('Feed'), country: _('Country') };

function countsText(c) {
	if (!c)
		return _('unknown');
	var kinds = Object.keys(c).filter(function(k) { return c[k] > 0; });
	return kinds.length ? kinds.map(function(k) { return (KIND[k] || k) + ': ' + c[k]; }).join(', ') : _('none');
}

// A group's name: the one every configuration has is translated.
function groupName(g) {
	return g === 'default' ? _('default') : g;
}

function factsTable(o) {
	var d = o.daemon || {};
	var rows = [
		[ _('Daemon'), daemonText(d) ],
		[ _('Last run'), d.last_run_started ? '%s (+%s / -%s)'.format(when(d.last_run_finished || d.last_run_started), d.last_run_added || 0, d.last_run_removed || 0) : _('never') ],
		[ _('Last success'), when(d.last_success) ],
		[ _('Last error'), d.last_error || _('none') ],
		[ _('Next run'), when(d.next_run, '-') ],
		[ _('Stored values'), countsText(o.counts) ],
		[ _('Journal mode'), o.journal_mode || _('unknown') ],
		[ _('Last snapshot'), when(o.last_snapshot) + (d.snapshot_pending ? ' ' + _('(newer changes not saved yet)') : '') ]
	];
	Object.keys(d.output_failures || {}).forEach(function(p) {
		rows.push([ _('Output failed'), p + ': ' + d.output_failures[p] ]);
	});
	Object.keys(d.kernel_sets || {}).forEach(function(g) {
		var k = d.kernel_sets[g];
		rows.push([ _('Kernel sets, group %s').format(groupName(g)),
			_('elements: %d, about %d KiB').format(k.elements, Math.ceil(k.estimate_bytes / 1024)) ]);
	});
	return E('table', { 'class': 'table', 'id': 'rcc-facts' }, rows.map(function(r) {
		return E('tr', { 'class': 'tr' }, [
			E('td', { 'class': 'td left', 'width': '33%' }, [ r[0] ]),
			E('td', { 'class': 'td left' }, [ r[1] ])
		]);
	}));
}

// One sentence for a held source (docs/trust.md): why its list did not change.
function heldText(h) {
	if (h.change === 'grew')
		return _('Held since %s: the answer grew: it has %d values where %d are stored, so the last good list stays until a second upstream, the same answer after some hours, or "confirm" applies it.')
			.format(when(h.since), h.values, h.stored);
	return _('Held since %s: the answer shrank: it has %d of %d stored values, so the last good list stays until a second upstream, the same answer after some hours, or "confirm" applies it.')
		.format(when(h.since), h.values, h.stored);
}

function lastRun(s) {
	if (s.held)
		return E('span', { 'style': AMBER, 'class': 'rcc-held' }, [ heldText(s.held) ]);
	if (s.failure)
		return E('span', { 'style': RED }, [ s.failure ]);
	return s.values ? _('ok') : _('not collected yet');
}

var STATES = {
	applied: _('applied'),
	held: _('held'),
	confirmed: _('confirmed')
};

// A source's last fetches, oldest first (at most 30), as the web page shows them: the
// values of each answer in one line, a held one marked "!" in amber; opened, a row per
// fetch with its time, upstream, values, what it added and removed, and its state.
function history(s) {
	var f = s.history || [];
	if (!f.length)
		return '';
	var counts = [], rows = [];
	f.forEach(function(x) {
		var held = x.state === 'held' ? ' rcc-held-fetch' : '', style = held ? AMBER : null;
		counts.push(' ', E('span', { 'class': 'rcc-fetch' + held, 'style': style }, [ x.values + (held ? '!' : '') ]));
		rows.push(E('tr', { 'class': 'tr' + held, 'style': style }, [ when(x.time), x.upstream || '-', x.values, '+' + x.added,
			'-' + x.removed, (STATES[x.state] || x.state) + (x.confirmed_by ? ' (' + x.confirmed_by + ')' : '')
		].map(function(v) { return E('td', { 'class': 'td' }, [ v ]); })));
	});
	return E('details', { 'class': 'rcc-history', 'style': GREY }, [
		E('summary', {}, [ _('History') + ':' ].concat(counts)),
		E('table', { 'class': 'table' }, [
			E('tr', { 'class': 'tr table-titles' }, [ _('Time'), _('Upstream'), _('Values'), _('Added'), _('Removed'), _('State') ]
				.map(function(t) { return E('th', { 'class': 'th' }, [ t ]); }))
		].concat(rows))
	]);
}

function groupSection(g, many) {
	var rows = g.sources.map(function(s) {
		return E('tr', { 'class': 'tr', 'data-source': s.source }, [
			E('td', { 'class': 'td', 'data-title': _('Source') }, [ shown(s.kind, s.source) ]),
			E('td', { 'class': 'td', 'data-title': _('Values') }, [ String(s.values) ]),
			E('td', { 'class': 'td', 'data-title': _('Last seen') }, [ when(s.last_seen, '-') ]),
			E('td', { 'class': 'td', 'data-title': _('Last run') }, [ lastRun(s), history(s) ])
		]);
	});
	var table = E('table', { 'class': 'table' }, [
		E('tr', { 'class': 'tr table-titles' }, [
			E('th', { 'class': 'th' }, [ _('Source') ]),
			E('th', { 'class': 'th' }, [ _('Values') ]),
			E('th', { 'class': 'th' }, [ _('Last seen') ]),
			E('th', { 'class': 'th' }, [ _('Last run') ])
		])
	].concat(rows.length ? rows : [
		E('tr', { 'class': 'tr placeholder' }, [ E('td', { 'class': 'td' }, [ E('em', {}, [ _('No sources yet.') ]) ]) ])
	]));
	return E('div', { 'class': 'cbi-section', 'data-group': g.name }, [
		E('h3', {}, [ (many ? _('Group %s').format(groupName(g.name)) : _('Sources')) + ' (' + countsText(g.counts) + ')' ]),
		table
	]);
}

function problems(errors) {
	return errors.map(function(e) {
		return E('div', { 'class': 'alert-message warning' }, [ e ]);
	});
}

function body(st) {
	if (st.error)
		return E('div', { 'id': 'rcc-status' }, problems([ _('Cannot read the status: %s').format(st.error) ]));
	var o = st.overview || {};
	var groups = o.groups || [];
	return E('div', { 'id': 'rcc-status' }, problems(o.errors || []).concat([
		E('div', { 'class': 'cbi-section' }, [ E('h3', {}, [ _('Service') ]), factsTable(o) ])
	], groups.map(function(g) { return groupSection(g, groups.length > 1); })));
}

function errorText(res) {
	return E('p', { 'style': RED }, [ res.error ]);
}

function lookupResult(res) {
	if (res.error)
		return errorText(res);
	var m = res.matches || [];
	if (!m.length)
		return E('p', {}, [ _('%s is in no stored list.').format(res.query) ]);
	return E('table', { 'class': 'table' }, [
		E('tr', { 'class': 'tr table-titles' }, [
			E('th', { 'class': 'th' }, [ _('Value') ]),
			E('th', { 'class': 'th' }, [ _('Source') ]),
			E('th', { 'class': 'th' }, [ _('Last seen') ])
		])
	].concat(m.map(function(x) {
		return E('tr', { 'class': 'tr rcc-match' }, [
			E('td', { 'class': 'td', 'data-title': _('Value') }, [ x.value ]),
			E('td', { 'class': 'td', 'data-title': _('Source') }, [ shown(x.kind, x.source) + (x.configured ? '' : ' ' + _('(not configured)')) ]),
			E('td', { 'class': 'td', 'data-title': _('Last seen') }, [ when(x.last_seen) ])
		]);
	})));
}

var STEPS = {
	stored: _('stored'),
	kernel: _('kernel set'),
	mark: _('mark'),
	rule: _('policy rule'),
	route: _('route')
};

// The steps of `explain`: green when the link holds, red at the broken one with its
// fix, grey when not checked; the verdict last. The step names are translated; what
// each found, its fix and the verdict are the CLI's own words.
function explainResult(res) {
	if (res.error)
		return errorText(res);
	var colour = { ok: GREEN, broken: RED };
	return E('div', {}, [
		E('ul', { 'id': 'rcc-explain' }, (res.steps || []).map(function(s) {
			var kids = [ E('strong', {}, [ (STEPS[s.step] || s.step) + ': ' ]), (s.found || []).join('; ') ];
			if (s.fix)
				kids.push(E('div', {}, [ _('Fix') + ': ' + s.fix ]));
			return E('li', { 'class': 'rcc-step rcc-' + s.state, 'style': colour[s.state] || GREY }, kids);
		})),
		E('p', { 'class': 'rcc-verdict', 'style': 'font-weight:bold;' + (res.routed ? GREEN : RED) }, [ res.verdict || '' ]),
		res.lookup ? lookupResult(res.lookup) : E('div')
	]);
}

function checkBox() {
	var input = E('input', { 'class': 'cbi-input-text', 'id': 'rcc-address', 'placeholder': '149.154.167.99', 'spellcheck': 'false' });
	var result = E('div', { 'id': 'rcc-lookup-result' });
	var check = function() {
		var a = input.value.trim();
		if (!a)
			return;
		// A prefix is only looked up; an address walks the whole chain.
		var show = a.indexOf('/') >= 0 ? lookupResult : explainResult;
		return (a.indexOf('/') >= 0 ? callLookup(a) : callExplain(a)).catch(failed).then(function(res) {
			result.replaceChildren(show(res));
		});
	};
	return E('div', { 'class': 'cbi-section' }, [
		E('h3', {}, [ _('Check an address') ]),
		E('div', { 'class': 'cbi-value' }, [
			input, ' ',
			E('button', { 'class': 'btn cbi-button cbi-button-action', 'id': 'rcc-lookup', 'click': check }, [ _('Check') ])
		]),
		result
	]);
}

function collectButton() {
	return E('button', {
		'class': 'btn cbi-button cbi-button-positive',
		'click': function() {
			return callCollect().catch(failed).then(function(res) {
				ui.addNotification(null, E('p', {}, [ res.error ? res.error : _('The daemon collects every source now.') ]), res.error ? 'danger' : 'info');
			});
		}
	}, [ _('Collect now') ]);
}

return view.extend({
	load: function() {
		return callStatus().catch(failed);
	},

	render: function(st) {
		var status = body(st);
		poll.add(function() {
			return callStatus().catch(failed).then(function(next) {
				var fresh = body(next);
				// A history the admin opened stays open (the row's source names it).
				var row = function(d) { return d.closest('tr').getAttribute('data-source'); };
				var opened = Array.prototype.map.call(status.querySelectorAll('details[open]'), row);
				fresh.querySelectorAll('details').forEach(function(d) { d.open = opened.indexOf(row(d)) >= 0; });
				status.replaceWith(fresh);
				status = fresh;
			});
		}, 30);
		return E('div', {}, [
			E('h2', {}, [ _('IP prefix lists') ]),
			E('div', { 'class': 'cbi-map-descr' }, [ _('The lists ripe-cidr-collector keeps: what was collected, from where, when it last worked, and what failed.') ]),
			status,
			checkBox(),
			E('div', { 'class': 'right' }, [ collectButton() ])
		]);
	},

	handleSaveApply: null,
	handleSave: null,
	handleReset: null
});
