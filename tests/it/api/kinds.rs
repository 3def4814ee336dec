//! `/feeds` and `/countries`: list, add, remove (a feed by its percent-encoded URL),
//! purge, groups, and bad input refused with a 400 naming the value, nothing stored
//! lost.

use super::*;

const URL: &str = "https://example.org/drop.txt";
const URL_ENCODED: &str = "https%3A%2F%2Fexample.org%2Fdrop.txt";

#[test]
fn feeds_and_countries_routes() {
    let t = TestDir::new();
    t.config(&json!({"asns": [], "groups": {"video": {}}}));
    let s = serve(&t);
    let a = call(
        s.addr,
        "POST",
        "/feeds",
        &[],
        Some(&format!(r#"{{"feed":"{URL}"}}"#)),
    );
    assert_eq!(a.status, 201, "{}", a.text());
    assert_eq!(a.json(), json!({"feed": URL, "added": true}));
    let a = call(
        s.addr,
        "POST",
        "/countries",
        &[],
        Some(r#"{"country":"nl","group":"video"}"#),
    );
    assert_eq!(a.status, 201, "{}", a.text());
    assert_eq!(a.json(), json!({"country": "NL", "added": true}));
    assert_eq!(get(s.addr, "/feeds").json()["feeds"], json!([URL]));
    assert_eq!(
        get(s.addr, "/countries?group=video").json()["countries"],
        json!(["NL"])
    );
    assert_eq!(
        get(s.addr, "/countries?group=default").json()["countries"],
        json!([])
    );
    // Stored values of the feed, purged with it.
    {
        let mut d = db::open(&t.paths()).unwrap();
        d.merge_source(Kind::Feed, URL, &strings(&["192.0.2.0/24"]), 1_000, 0)
            .unwrap();
    }
    let bytes_before = fs::read(t.file("config.json")).unwrap();
    for (method, target, body, names) in [
        (
            "POST",
            "/feeds",
            Some(r#"{"feed":"ftp://example.org/x"}"#),
            "\"ftp://example.org/x\"",
        ),
        ("POST", "/feeds", Some(r#"{"feed":5}"#), "expected a string"),
        (
            "POST",
            "/countries",
            Some(r#"{"country":"nld"}"#),
            "\"NLD\"",
        ),
        ("POST", "/countries", Some(r#"{"asn":"NL"}"#), "unknown key"),
        ("DELETE", "/countries/n1", None, "\"N1\""),
        ("DELETE", "/feeds/gopher%3A%2F%2Fx", None, "\"gopher://x\""),
    ] {
        let a = call(s.addr, method, target, &[], body);
        assert_error(&a, 400, names);
    }
    assert_eq!(fs::read(t.file("config.json")).unwrap(), bytes_before);
    let a = call(
        s.addr,
        "DELETE",
        &format!("/feeds/{URL_ENCODED}?purge=true"),
        &[],
        None,
    );
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(a.json(), json!({"feed": URL, "removed": true, "purged": 1}));
    let a = call(s.addr, "DELETE", "/countries/NL?group=video", &[], None);
    assert_eq!(a.json(), json!({"country": "NL", "removed": true}));
    assert_eq!(get(s.addr, "/feeds").json()["feeds"], json!([]));
    assert_eq!(
        db::open(&t.paths())
            .unwrap()
            .count_values(Kind::Feed)
            .unwrap(),
        0
    );
}
