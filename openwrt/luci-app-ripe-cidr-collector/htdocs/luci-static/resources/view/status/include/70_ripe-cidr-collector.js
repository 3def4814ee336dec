'use strict';
'require baseclass';
'require rpc';

// Status -> Overview: a short box of ripe-cidr-collector (the daemon, the stored
// values, held sources, the last error) with a link to its own status page. LuCI's
// overview loads every view/status/include/*.js in the order of their names and
// shows each one's title and render(). Texts become text nodes (arrays); a failed
// call shows as the error it is (`reject: true`).

var callStatus = rpc.declare({
	object: 'luci.ripe-cidr-collector',
	method: 'status',
	expect: { '': {} },
	reject: true
});

function when(iso) {
	var d = new Date(iso);
	return isNaN(d) ? iso : d.toLocaleString();
}

function daemonText(d) {
	var age = d.heartbeat ? (Date.now() - Date.parse(d.heartbeat)) / 1000 : NaN;
	if (d.heartbeat && d.pid && age <= 180)
		return _('running (pid %d), heartbeat %s').format(d.pid, when(d.heartbeat));
	if (d.heartbeat)
		return _('not running, last heartbeat %s').format(when(d.heartbeat));
	return _('no heartbeat recorded (is the service enabled and started?)');
}

// The kinds' names (the keys of `counts`), as the sources page names them.
var KIND = { asn: _('ASN'), fqdn: _('Host name'), feed: _('Feed'), country: _('Country') };

// How many sources hold back a shrunken answer (docs/trust.md).
function heldCount(o) {
	return (o.groups || []).reduce(function(n, g) {
		return n + g.sources.filter(function(s) { return s.held; }).length;
	}, 0);
}

return baseclass.extend({
	title: _('IP prefix lists'),

	load: function() {
		return callStatus().catch(function(e) {
			// The first line: LuCI's L.raise appends the stack ("\n  at ...").
			return { error: ((e && e.message) ? e.message : String(e)).split('\n')[0] };
		});
	},

	render: function(st) {
		if (st.error)
			return E('p', { 'class': 'rcc-overview', 'style': 'color:var(--error-color-high, #c44)' },
				[ _('Cannot read the status: %s').format(st.error) ]);
		var o = st.overview || {}, d = o.daemon || {}, c = o.counts || {}, held = heldCount(o);
		var counts = Object.keys(c).filter(function(k) { return c[k] > 0; })
			.map(function(k) { return (KIND[k] || k) + ': ' + c[k]; }).join(', ');
		var rows = [
			[ _('Daemon'), daemonText(d) ],
			[ _('Stored values'), counts || _('none') ]
		];
		if (held)
			rows.push([ _('Held sources'), _('%d, waiting for a confirmation').format(held), 'color:var(--warn-color-high, #c80)' ]);
		if (d.last_error || (o.errors || []).length)
			rows.push([ _('Last error'), d.last_error || o.errors[0], 'color:var(--error-color-high, #c44)' ]);
		return E('table', { 'class': 'table rcc-overview' }, rows.map(function(r) {
			return E('tr', { 'class': 'tr' }, [
				E('td', { 'class': 'td left', 'width': '33%' }, [ r[0] ]),
				E('td', { 'class': 'td left', 'style': r[2] || '' }, [ r[1] ])
			]);
		}).concat([
			E('tr', { 'class': 'tr' }, [
				E('td', { 'class': 'td left', 'colspan': '2' }, [
					E('a', { 'href': L.url('admin/services/ripe-cidr-collector/status') }, [ _('Details') ])
				])
			])
		]));
	}
});
