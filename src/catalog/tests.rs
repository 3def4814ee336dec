use super::*;

/// One valid entry with `change` applied to its JSON text.
fn one(entry: &str) -> Result<Catalog, CatalogError> {
    Catalog::parse(&format!("{{\"services\": [{entry}]}}"))
}

const GOOD: &str = r#"{"name": "telegram", "title": "Telegram",
    "asns": [{"asn": "AS62041", "holder": "TELEGRAM"}],
    "feeds": ["https://core.telegram.org/resources/cidr.txt"],
    "domains": ["Telegram.org", "t.me"],
    "sources": ["https://core.telegram.org/resources/cidr.txt"],
    "reviewed": "2026-12-06"}"#;

fn error_of(entry: &str) -> String {
    one(entry).unwrap_err().to_string()
}

#[test]
fn a_good_entry_is_read_normalised() {
    let c = one(GOOD).unwrap();
    let s = c.get("telegram").unwrap();
    assert_eq!(s.asns[0].asn, "62041");
    assert_eq!(s.domains, ["telegram.org", "t.me"]);
    assert_eq!(s.brings().count(), 4);
    assert!(s.has(source::Kind::Fqdn, "t.me"));
}

#[test]
fn each_mistake_names_the_entry_and_the_field() {
    let cases = [
        (
            GOOD.replace("AS62041", "ASX"),
            "services[0] (telegram).asns[0].asn",
            "ASX",
        ),
        (
            GOOD.replace("\"telegram\"", "\"Tele gram\""),
            "services[0].name",
            "Tele gram",
        ),
        (
            GOOD.replace("\"title\"", "\"titel\""),
            "services[0] (telegram).titel",
            "did you mean title",
        ),
        (
            GOOD.replace("\"title\": \"Telegram\",", ""),
            "services[0] (telegram).title",
            "missing",
        ),
        (
            GOOD.replace("2026-12-06", "2026-02-31"),
            "services[0] (telegram).reviewed",
            "2026-02-31",
        ),
        (
            GOOD.replace("https://core", "ftp://core"),
            "services[0] (telegram).feeds[0]",
            "ftp://",
        ),
        (
            GOOD.replace("t.me", "t me"),
            "services[0] (telegram).domains[1]",
            "t me",
        ),
        (
            GOOD.replace("\"t.me\"", "\"me\""),
            "services[0] (telegram).domains[1]",
            "single label",
        ),
        (
            GOOD.replace("\"holder\": \"TELEGRAM\"", "\"holder\": \"\""),
            ".asns[0].holder",
            "empty",
        ),
        (
            GOOD.replace(
                "\"sources\": [\"https://core.telegram.org/resources/cidr.txt\"]",
                "\"sources\": []",
            ),
            ".sources",
            "empty",
        ),
    ];
    for (entry, key, word) in cases {
        let e = error_of(&entry);
        assert!(
            e.contains(key) && e.contains(word),
            "{e}\n(expected {key}, {word})"
        );
    }
}

#[test]
fn duplicate_names_repeated_keys_and_unknown_top_keys_are_errors() {
    let e = Catalog::parse(&format!("{{\"services\": [{GOOD}, {GOOD}]}}")).unwrap_err();
    assert!(e.to_string().contains("services[1] (telegram).name"), "{e}");
    let e = error_of(&GOOD.replace(
        "\"title\": \"Telegram\",",
        "\"title\": \"A\", \"title\": \"B\",",
    ));
    assert!(
        e.contains("\"title\" given more than once") && e.contains("line"),
        "{e}"
    );
    let e = Catalog::parse("{\"services\": [], \"servises\": 1}").unwrap_err();
    assert!(e.to_string().contains("servises"), "{e}");
    assert!(Catalog::parse("{\"services\": [], \"groups\": {}}").is_ok());
    assert!(Catalog::parse("[1")
        .unwrap_err()
        .to_string()
        .contains("line 1"));
}

#[test]
fn an_entry_that_brings_nothing_is_refused() {
    let e = error_of(&GOOD.replace(
        r#""asns": [{"asn": "AS62041", "holder": "TELEGRAM"}],
    "feeds": ["https://core.telegram.org/resources/cidr.txt"],
    "domains": ["Telegram.org", "t.me"],"#,
        r#""asns": [], "feeds": [], "domains": [],"#,
    ));
    assert!(e.contains("brings nothing"), "{e}");
}

#[test]
fn unknown_names_get_a_hint() {
    let c = one(GOOD).unwrap();
    assert!(c.unknown("telegam").contains("did you mean telegram?"));
}

#[test]
fn a_file_replaces_the_builtin_and_a_broken_one_names_itself() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.json");
    assert_eq!(*Catalog::load(&cfg, None).unwrap(), Catalog::builtin());
    std::fs::write(
        dir.path().join("services.json"),
        format!("{{\"services\": [{GOOD}]}}"),
    )
    .unwrap();
    assert_eq!(Catalog::load(&cfg, None).unwrap().services.len(), 1);
    std::fs::write(dir.path().join("mine.json"), "{\"services\": 1}").unwrap();
    let (file, why) = Catalog::load(&cfg, Some("mine.json")).unwrap_err();
    assert!(
        file.ends_with("mine.json") && why.contains("services"),
        "{why}"
    );
    let (file, _) = Catalog::load(&cfg, Some("absent.json")).unwrap_err();
    assert!(file.ends_with("absent.json"));
}

#[test]
fn the_builtin_is_stored_compact_and_written_back_the_same() {
    assert!(
        !BUILTIN.contains("\n  "),
        "build.rs takes the whitespace out"
    );
    let c = Catalog::parse(BUILTIN).unwrap();
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out, false);
    w.begin_object();
    w.field("services", &c.services);
    w.end_object();
    assert_eq!(
        Catalog::parse(std::str::from_utf8(&out).unwrap()).unwrap(),
        c
    );
}

/// The services whose ASNs are a CDN's or a hoster's own: another service that
/// merely uses them must not bring them (routing "Telegram" must not route half of
/// the web behind Cloudflare).
const CARRIERS: &[&str] = &["cloudflare", "akamai", "hetzner", "ovh", "digitalocean"];

#[test]
fn the_builtin_catalog_has_its_shape() {
    let c = Catalog::parse(BUILTIN).expect("the built-in catalog reads");
    assert!(
        c.services.len() >= 25,
        "{} services; the catalog has at least 25",
        c.services.len()
    );
    for s in &c.services {
        assert!(
            !s.sources.is_empty() && !s.reviewed.is_empty(),
            "{}",
            s.name
        );
    }
    for carrier in CARRIERS {
        let Some(own) = c.get(carrier) else {
            panic!("the catalog has {carrier}");
        };
        for other in c.services.iter().filter(|s| s.name != *carrier) {
            for a in &own.asns {
                assert!(
                    !other.asns.iter().any(|b| b.asn == a.asn),
                    "AS{} of {carrier} is listed under {}",
                    a.asn,
                    other.name
                );
            }
        }
    }
}
