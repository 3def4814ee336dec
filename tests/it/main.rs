//! Integration tests: one test binary (fast builds) with a module per area. Library
//! tests call the crate on temporary directories; black-box tests start the real
//! binary and talk to it only over 127.0.0.1.

#[cfg(feature = "api")]
mod answer_budget;
#[cfg(feature = "api")]
mod api;
#[cfg(all(feature = "api", feature = "collect"))]
mod asn_names;
#[cfg(all(feature = "api", feature = "collect"))]
mod asn_search;
#[cfg(feature = "collect")]
mod asn_upstreams;
#[cfg(all(feature = "collect", feature = "bgp", target_os = "linux"))]
mod bgp;
#[cfg(all(feature = "collect", feature = "bgp", target_os = "linux"))]
mod bgp_formats;
#[cfg(feature = "api")]
mod body_limits;
#[cfg(all(feature = "api", unix))]
mod browser;
mod cli;
mod cli_check;
mod cli_groups;
mod cli_polish;
#[cfg(feature = "collect")]
mod collect;
mod common;
#[cfg(feature = "completions")]
mod completions;
#[cfg(feature = "api")]
mod config_limits;
#[cfg(feature = "collect")]
mod daemon;
#[cfg(all(feature = "collect", target_os = "linux"))]
mod dnsmasq;
mod docs;
#[cfg(all(feature = "api", feature = "collect", target_os = "linux"))]
mod explain;
#[cfg(feature = "collect")]
mod fetching;
mod formats_real;
mod formats_stacks;
#[cfg(all(feature = "collect", target_os = "linux"))]
mod group_marks;
#[cfg(all(feature = "api", feature = "routes", target_os = "linux"))]
mod group_routes;
mod group_unroute;
#[cfg(all(feature = "api", feature = "collect"))]
mod groups;
mod healthcheck;
mod hostile_files;
#[cfg(feature = "api")]
mod http_attacks;
#[cfg(feature = "api")]
mod http_limits;
#[cfg(all(feature = "collect", target_os = "linux"))]
mod kernel_sets;
#[cfg(feature = "collect")]
mod kinds;
#[cfg(feature = "api")]
mod listing_gzip;
#[cfg(all(feature = "api", feature = "collect", unix))]
mod luci;
#[cfg(all(feature = "api", feature = "collect", unix))]
mod luci_history;
mod luci_i18n;
#[cfg(all(feature = "api", feature = "collect", unix))]
mod luci_names;
#[cfg(all(feature = "api", feature = "collect", unix))]
mod luci_plugin;
#[cfg(all(feature = "api", feature = "collect", unix))]
mod luci_plugin_run;
#[cfg(all(feature = "api", feature = "collect", unix))]
mod luci_routes;
#[cfg(all(feature = "api", feature = "collect", unix))]
mod luci_services;
#[cfg(all(feature = "api", feature = "collect", unix))]
mod luci_settings;
#[cfg(feature = "inspect")]
mod migrate;
#[cfg(all(feature = "collect", target_os = "linux"))]
mod netlink;
#[cfg(all(feature = "api", feature = "collect", target_os = "linux"))]
mod new_user;
mod openwrt;
#[cfg(all(feature = "collect", target_os = "linux"))]
mod openwrt_boot;
#[cfg(unix)]
mod openwrt_routes;
#[cfg(all(feature = "collect", target_os = "linux"))]
mod openwrt_run;
#[cfg(unix)]
mod packaging;
#[cfg(all(feature = "collect", target_os = "linux"))]
mod read_only;
#[cfg(all(feature = "collect", target_os = "linux"))]
mod redirects;
#[cfg(unix)]
mod release;
mod review;
#[cfg(all(feature = "collect", target_os = "linux"))]
mod run_memory;
#[cfg(all(feature = "api", feature = "collect", unix))]
mod service_user;
#[cfg(feature = "verify")]
mod service_verify;
#[cfg(all(feature = "api", feature = "collect", feature = "inspect"))]
mod services;
mod snapshot;
mod storage;
mod systemd;
#[cfg(all(feature = "api", feature = "collect"))]
mod trust;
mod upstream;
#[cfg(all(feature = "api", feature = "collect", unix))]
mod web;
#[cfg(all(feature = "api", feature = "collect", unix))]
mod web_names;
#[cfg(all(feature = "api", feature = "collect", unix))]
mod web_routes;
#[cfg(all(feature = "api", feature = "collect", target_os = "linux"))]
mod write_failures;
#[cfg(all(feature = "api", feature = "collect"))]
mod wrong_list;
