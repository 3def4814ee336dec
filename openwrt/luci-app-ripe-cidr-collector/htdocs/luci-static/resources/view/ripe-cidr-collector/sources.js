'use strict';
'require view';
'require rpc';
'require ui';

// Services -> IP prefix lists -> Sources: the sources of each group, added and
// removed through the rpcd plugin (the CLI's `asn add`, `fqdn remove` ...; the
// daemon collects a new source within seconds). Texts go to E() inside arrays, as
// text nodes: LuCI sets innerHTML for a bare string child (see status.js). A failed
// call (`reject: true`) is reported as the plugin's refusals are.

var callStatus = rpc.declare({
	object: 'luci.ripe-cidr-collector',
	method: 'status',
	expect: { '': {} },
	reject: true
});

var callAdd = rpc.declare({
	object: 'luci.ripe-cidr-collector',
	method: 'add',
	params: [ 'kind', 'source', 'group' ],
	expect: { '': {} },
	reject: true
});

var callRemove = rpc.declare({
	object: 'luci.ripe-cidr-collector',
	method: 'remove',
	params: [ 'kind', 'source', 'group', 'purge' ],
	expect: { '': {} },
	reject: true
});

// ASNs by their holder's name (the CLI's `asn search`, RIPEstat); "Use" fills in
// the add form of the first group.
var callSearch = rpc.declare({
	object: 'luci.ripe-cidr-collector',
	method: 'search',
	params: [ 'text' ],
	expect: { '': {} },
	reject: true
});

var callServices = rpc.declare({
	object: 'luci.ripe-cidr-collector',
	method: 'services',
	expect: { '': {} },
	reject: true
});

var callServiceAdd = rpc.declare({
	object: 'luci.ripe-cidr-collector',
	method: 'service_add',
	params: [ 'service', 'group' ],
	expect: { '': {} },
	reject: true
});

var callServiceRemove = rpc.declare({
	object: 'luci.ripe-cidr-collector',
	method: 'service_remove',
	params: [ 'service', 'group', 'purge' ],
	expect: { '': {} },
	reject: true
});

// "Route via" per group: the groups' routes (`group list --json`), netifd's
// interfaces (ubus network.interface dump, as LuCI's network.js reads them), and the
// change through the CLI's `group add NAME --via IFACE` / `group unroute NAME`, which
// has the init script rewrite netifd's `config rule`/`config route` sections.
var callGroups = rpc.declare({
	object: 'luci.ripe-cidr-collector',
	method: 'groups',
	expect: { '': {} },
	reject: true
});

var callInterfaces = rpc.declare({
	object: 'network.interface',
	method: 'dump',
	expect: { 'interface': [] },
	reject: true
});

var callGroupRoute = rpc.declare({
	object: 'luci.ripe-cidr-collector',
	method: 'group_route',
	params: [ 'group', 'via' ],
	expect: { '': {} },
	reject: true
});

var callGroupUnroute = rpc.declare({
	object: 'luci.ripe-cidr-collector',
	method: 'group_unroute',
	params: [ 'group' ],
	expect: { '': {} },
	reject: true
});

// The routes of the groups and netifd's interfaces; an empty answer when either
// cannot be read (the sources are still shown).
function loadRoutes() {
	return Promise.all([ callGroups().catch(failed), callInterfaces().catch(function() { return []; }) ]);
}

var KINDS = {
	asn: [ _('ASN'), 'AS62041' ],
	fqdn: [ _('Host name'), 'example.com' ],
	feed: [ _('Feed URL'), _('URL of a plain list') ],
	country: [ _('Country'), 'NL' ]
};

function failed(e) {
	// The first line: LuCI's L.raise appends the stack ("\n  at ...") to the message.
	return { error: ((e && e.message) ? e.message : String(e)).split('\n')[0] };
}

function shown(kind, source) {
	return kind === 'asn' ? 'AS' + source : source;
}

// What a catalog service brings, counted.
function brings(s) {
	var out = [];
	if (s.asns.length)
		out.push(_('ASNs: %d').format(s.asns.length));
	if (s.feeds.length)
		out.push(_('address lists: %d').format(s.feeds.length));
	if (s.domains.length)
		out.push(_('host names: %d').format(s.domains.length));
	return out.join(', ');
}

// Both answers the view shows: the status (sources per group) and the catalog.
function loadAll() {
	return Promise.all([ callStatus().catch(failed), callServices().catch(failed), loadRoutes() ]);
}

// Shows the plugin's answer; true when the change was made.
function report(res, done) {
	if (res && res.error) {
		ui.addNotification(null, E('p', {}, [ res.error ]), 'danger');
		return false;
	}
	ui.addNotification(null, E('p', {}, [ done ]), 'info');
	return true;
}

return view.extend({
	load: function() {
		return loadAll();
	},

	rerender: function() {
		return loadAll().then(L.bind(function(st) {
			var fresh = this.sections(st);
			this.box.replaceWith(fresh);
			this.box = fresh;
		}, this));
	},

	// One service of the catalog in a group: its title, what it brings, and Add or
	// Remove. Every text in an array (a catalog file is data, never markup).
	serviceRow: function(s, group) {
		var on = (s.groups || []).indexOf(group) >= 0;
		return E('tr', { 'class': 'tr', 'data-service': s.name }, [
			E('td', { 'class': 'td', 'data-title': _('Service') }, [
				E('strong', {}, [ s.title ]), E('br'), E('small', {}, [ s.about || '' ])
			]),
			E('td', { 'class': 'td', 'data-title': _('Brings') }, [ brings(s) ]),
			E('td', { 'class': 'td cbi-section-actions' }, [
				E('button', {
					'class': on ? 'btn cbi-button cbi-button-remove' : 'btn cbi-button cbi-button-add',
					'click': L.bind(function() {
						var call = on ? callServiceRemove(s.name, group, false) : callServiceAdd(s.name, group);
						var done = on ? _('%s removed; its values age out.') : _('%s added; the daemon collects it within seconds.');
						return call.catch(failed).then(L.bind(function(res) {
							if (report(res, done.format(s.title)))
								return this.rerender();
						}, this));
					}, this)
				}, [ on ? _('Remove') : _('Add') ])
			])
		]);
	},

	serviceTable: function(catalog, group) {
		if (!catalog.length)
			return '';
		return E('div', { 'class': 'rcc-services', 'data-group': group }, [
			E('h4', {}, [ _('Services') ]),
			E('div', { 'class': 'cbi-section-descr' }, [ _('Route a service by its name: the catalog brings its ASNs, its own address lists and its host names into this group.') ]),
			E('table', { 'class': 'table' }, catalog.map(L.bind(function(s) { return this.serviceRow(s, group); }, this)))
		]);
	},

	// A group's route: what it is now, and a choice of netifd's interfaces ("none"
	// takes it away). Not for `default`, which is never routed.
	routeBox: function(routes, group) {
		if (group === 'default')
			return '';
		var g = (((routes || [])[0] || {}).groups || []).filter(function(x) { return x.name === group; })[0] || {};
		var ifaces = ((routes || [])[1] || []).filter(function(i) { return i.interface !== 'loopback'; });
		var cur = g.route ? g.route.via : '';
		var state = function(n) {
			var i = ifaces.filter(function(x) { return x.interface === n; })[0];
			return i ? (i.up ? '' : ' (' + _('down') + ')') : ' (' + _('not present') + ')';
		};
		var names = ifaces.map(function(i) { return i.interface; });
		if (cur && names.indexOf(cur) < 0)
			names.push(cur);
		var sel = E('select', { 'class': 'cbi-input-select', 'name': 'via' }, [ E('option', { 'value': '' }, [ _('none') ]) ].concat(names.map(function(n) {
			return E('option', { 'value': n }, [ n + state(n) ]);
		})));
		sel.value = cur;
		var now = g.route
			? _('Routed via %s (table %s)').format(cur, String(g.route.table)) + state(cur)
			: _('Not routed: its traffic takes the main table');
		return E('div', { 'class': 'cbi-value rcc-route', 'data-group': group }, [
			E('label', { 'class': 'cbi-value-title' }, [ _('Route via') ]),
			E('div', { 'class': 'cbi-value-field' }, [
				sel, ' ',
				E('button', {
					'class': 'btn cbi-button cbi-button-apply',
					'click': L.bind(function() {
						var via = sel.value;
						var call = via ? callGroupRoute(group, via) : callGroupUnroute(group);
						var done = via ? _('Group %s is routed via %s.').format(group, via) : _('Group %s is no longer routed.').format(group);
						return call.catch(failed).then(L.bind(function(res) {
							if (report(res, done))
								return this.rerender();
						}, this));
					}, this)
				}, [ _('Save') ]),
				E('div', { 'class': 'cbi-value-description rcc-route-now' }, [ now ])
			])
		]);
	},

	sourceRow: function(s, group, catalog) {
		var titles = (s.services || []).map(function(n) {
			var c = catalog.filter(function(x) { return x.name === n; })[0];
			return c ? c.title : n;
		});
		return E('tr', { 'class': 'tr', 'data-source': s.source }, [
			E('td', { 'class': 'td', 'data-title': _('Kind') }, [ (KINDS[s.kind] || [ s.kind ])[0] ]),
			E('td', { 'class': 'td', 'data-title': _('Source') }, [
				shown(s.kind, s.source),
				s.kind === 'asn' ? E('span', { 'class': 'rcc-holder' }, [ ' ', s.holder || _('(name unknown)') ]) : '',
				titles.length ? E('small', { 'class': 'rcc-from' }, [ ' ' + _('from %s').format(titles.join(', ')) ]) : ''
			]),
			E('td', { 'class': 'td', 'data-title': _('Values') }, [ String(s.values) ]),
			E('td', { 'class': 'td cbi-section-actions' }, [
				E('button', {
					'class': 'btn cbi-button cbi-button-remove',
					'title': _('Remove; its values age out'),
					'click': L.bind(function() {
						return callRemove(s.kind, s.source, group, false).catch(failed).then(L.bind(function(res) {
							if (report(res, _('%s removed; its values age out.').format(shown(s.kind, s.source))))
								return this.rerender();
						}, this));
					}, this)
				}, [ _('Remove') ])
			])
		]);
	},

	addForm: function(kinds, group) {
		var kind = E('select', { 'class': 'cbi-input-select', 'name': 'kind' }, kinds.map(function(k) {
			return E('option', { 'value': k }, [ KINDS[k][0] ]);
		}));
		var source = E('input', { 'class': 'cbi-input-text', 'name': 'source', 'placeholder': KINDS[kinds[0]][1], 'spellcheck': 'false' });
		kind.addEventListener('change', function() { source.placeholder = KINDS[kind.value][1]; });
		return E('div', { 'class': 'cbi-value rcc-add', 'data-group': group }, [
			kind, ' ', source, ' ',
			E('button', {
				'class': 'btn cbi-button cbi-button-add',
				'click': L.bind(function() {
					var v = source.value.trim();
					if (!v)
						return;
					return callAdd(kind.value, v, group).catch(failed).then(L.bind(function(res) {
						if (report(res, _('%s added; the daemon collects it within seconds.').format(v)))
							return this.rerender();
					}, this));
				}, this)
			}, [ _('Add') ])
		]);
	},

	// The search box: its results are text nodes, whatever a holder's name holds.
	searchBox: function() {
		var text = E('input', { 'class': 'cbi-input-text', 'id': 'rcc-search-text', 'maxlength': '64', 'placeholder': _('company, e.g. telegram'), 'spellcheck': 'false' });
		var out = E('div', { 'id': 'rcc-search-result' });
		var use = function(asn) {
			var f = document.querySelector('.rcc-add');
			if (!f)
				return;
			f.querySelector('[name=kind]').value = 'asn';
			f.querySelector('[name=source]').value = 'AS' + asn;
			f.querySelector('[name=source]').focus();
		};
		var go = function() {
			var v = text.value.trim();
			if (!v)
				return;
			out.replaceChildren(E('em', {}, [ _('Searching…') ]));
			return callSearch(v).catch(failed).then(function(res) {
				if (res && res.error) {
					out.replaceChildren(E('div', { 'class': 'alert-message warning' }, [ res.error ]));
					return;
				}
				var list = (res && res.asns) || [];
				if (!list.length) {
					out.replaceChildren(E('p', {}, [ _('No ASN found for %s.').format(v) ]));
					return;
				}
				out.replaceChildren(E('table', { 'class': 'table' }, list.map(function(a) {
					return E('tr', { 'class': 'tr rcc-found', 'data-asn': a.asn }, [
						E('td', { 'class': 'td' }, [ 'AS' + a.asn ]),
						E('td', { 'class': 'td' }, [ a.holder ]),
						E('td', { 'class': 'td' }, [ a.announced ? _('announced') : _('not announced') ]),
						E('td', { 'class': 'td cbi-section-actions' }, [
							E('button', { 'class': 'btn cbi-button', 'click': function() { use(a.asn); } }, [ _('Use') ])
						])
					]);
				})));
			});
		};
		return E('div', { 'class': 'cbi-section', 'id': 'rcc-search' }, [
			E('h3', {}, [ _('Find an ASN by name') ]),
			E('div', { 'class': 'cbi-value' }, [
				text, ' ',
				E('button', { 'class': 'btn cbi-button cbi-button-action', 'id': 'rcc-search-go', 'click': go }, [ _('Search') ])
			]),
			out
		]);
	},

	sections: function(both) {
		var st = both[0] || {}, catalog = (both[1] || {}).services || [];
		var o = st.overview || {};
		var groups = o.groups || [];
		var kinds = Object.keys(o.counts || { asn: 0, fqdn: 0 }).filter(function(k) { return KINDS[k]; });
		var errors = (st.error ? [ _('Cannot read the status: %s').format(st.error) ] : o.errors || []).map(function(e) {
			return E('div', { 'class': 'alert-message warning' }, [ e ]);
		});
		return E('div', { 'id': 'rcc-sources' }, errors.concat(groups.map(L.bind(function(g) {
			var rows = g.sources.map(L.bind(function(s) { return this.sourceRow(s, g.name, catalog); }, this));
			return E('div', { 'class': 'cbi-section', 'data-group': g.name }, [
				E('h3', {}, [ groups.length > 1 ? _('Group %s').format(g.name === 'default' ? _('default') : g.name) : _('Sources') ]),
				this.routeBox(both[2], g.name),
				this.serviceTable(catalog, g.name),
				E('table', { 'class': 'table' }, [
					E('tr', { 'class': 'tr table-titles' }, [
						E('th', { 'class': 'th' }, [ _('Kind') ]),
						E('th', { 'class': 'th' }, [ _('Source') ]),
						E('th', { 'class': 'th' }, [ _('Values') ]),
						E('th', { 'class': 'th cbi-section-actions' })
					])
				].concat(rows)),
				this.addForm(kinds, g.name)
			]);
		}, this))));
	},

	render: function(st) {
		this.box = this.sections(st);
		return E('div', {}, [
			E('h2', {}, [ _('IP prefix lists: sources') ]),
			E('div', { 'class': 'cbi-map-descr' }, [ _('ASNs give the prefixes they announce, host names the addresses they resolve to. Removed sources keep their values until they age out (ttl_days).') ]),
			this.box,
			this.searchBox()
		]);
	},

	handleSaveApply: null,
	handleSave: null,
	handleReset: null
});
