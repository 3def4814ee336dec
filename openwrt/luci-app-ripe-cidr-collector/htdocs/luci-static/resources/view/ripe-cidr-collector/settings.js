'use strict';
'require view';
'require form';

// Services -> IP prefix lists -> Settings: the service settings in
// /etc/config/ripe-cidr-collector (the procd service reloads when they change). The
// sources and outputs live in config.json (the Sources tab, the CLI, the API).

// The rules of ripe_cidr_path_rule in the main package's path-check.sh, which the
// init script, the firewall include and the rpcd plugin apply (the service does not
// start otherwise): whoever edits this form need not be root, and these paths are
// given to the daemon's user or written and run by root. Here to say what is wrong
// while the value is typed; keep the two the same (tests/it/luci.rs runs both on one
// list of paths).
var own = [ '/etc/ripe-cidr-collector/', '/var/lib/ripe-cidr-collector/' ],
	roots = [ '/tmp/', '/var/', '/mnt/', '/overlay/' ];

function pathCheck(kind) {
	return function(sid, v) {
		if (v == null || v === '')
			return true;
		if (!/^\/[A-Za-z0-9._\/-]+$/.test(v) || /\.\.|\/\/|\/$/.test(v))
			return _('Use an absolute path of letters, digits and ._-/');
		var base = v.replace(/.*\//, ''), p = v + '/';
		var mine = own.some(function(d) { return p.indexOf(d) === 0; }) ||
			(kind === 'nft' && /^\/etc\/ripe-cidr-.*\.nft$/.test(v));
		if (!mine && !roots.some(function(d) { return v.indexOf(d) === 0 && v.length > d.length; }))
			return _('Only under /etc/ripe-cidr-collector, /var/lib/ripe-cidr-collector, /tmp, /var, /mnt or /overlay');
		if (kind === 'dir' && !mine && base.indexOf('ripe-cidr') < 0)
			return _('The directory\'s name must contain ripe-cidr (it is given to the daemon\'s user)');
		if (kind === 'nft' && !/\.nft$/.test(base))
			return _('The file name must end in .nft');
		if (kind === 'db' && !/\.db$/.test(base))
			return _('The file name must end in .db');
		if (kind === 'snapshot' && !/\.(db|snapshot)$/.test(base))
			return _('The file name must end in .snapshot or .db');
		return true;
	};
}

return view.extend({
	pathCheck: pathCheck,

	render: function() {
		var m, s, o;

		m = new form.Map('ripe-cidr-collector', _('IP prefix lists: settings'),
			_('How the ripe-cidr-collector service runs. Sources are on the Sources tab.'));

		s = m.section(form.NamedSection, 'main', 'collector');
		s.anonymous = true;

		o = s.option(form.Flag, 'enabled', _('Enabled'), _('Start the daemon at boot (the package installs it stopped).'));
		o.rmempty = false;

		o = s.option(form.Value, 'listen', _('API address'),
			_('Where the HTTP API and its web page listen, e.g. 127.0.0.1:8080; keep it on loopback or a trusted LAN address. Empty: no API.'));
		o.datatype = 'ipaddrport(1)';
		o.placeholder = '127.0.0.1:8080';

		o = s.option(form.Value, 'data_dir', _('Data directory'), _('status.json and the CLI\'s default directory; /var is in RAM.'));
		o.placeholder = '/var/lib/ripe-cidr-collector';
		o.validate = pathCheck('dir');

		o = s.option(form.Value, 'db', _('Database'), _('In RAM by default: no flash wear from the runs.'));
		o.placeholder = '/var/lib/ripe-cidr-collector/ripe.db';
		o.validate = pathCheck('db');

		o = s.option(form.Value, 'snapshot', _('Snapshot on flash'), _('Restored after a reboot. Empty: no snapshot.'));
		o.placeholder = '/etc/ripe-cidr-collector/ripe.db.snapshot';
		o.validate = pathCheck('snapshot');

		o = s.option(form.DynamicList, 'trigger_interface', _('Collect when up'), _('When one of these interfaces comes up, the daemon collects at once.'));
		o.datatype = 'network';

		o = s.option(form.ListValue, 'log_level', _('Log level'));
		o.value('info', _('info'));
		o.value('debug', _('debug'));
		o.value('warn', _('warnings and errors'));
		o.default = 'info';

		o = s.option(form.Flag, 'syslog', _('Log to syslog'),
			_('Each log line with its own priority (daemon.info, daemon.warn, daemon.err); off: everything on stderr, which procd logs as daemon.err.'));
		o.default = '1';
		o.rmempty = false;

		o = s.option(form.Value, 'user', _('Run as user'),
			_('The daemon\'s own user, with only CAP_NET_ADMIN (and CAP_NET_BIND_SERVICE for a port below 1024), where procd-ujail is installed; root otherwise. root for output commands that need root.'));
		o.placeholder = 'ripe-cidr';

		o = s.option(form.DynamicList, 'nft_file', _('nft files for the firewall'),
			_('nft scripts the firewall include loads with nft -f after fw4 flush deleted the table, once the sets are loaded again: rendered scripts of outputs without "load", your own chain.'));
		o.validate = pathCheck('nft');

		return m.render();
	}
});
