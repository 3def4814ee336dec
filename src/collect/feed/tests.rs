use super::*;

#[test]
fn lines_first_token_and_comments() {
    assert_eq!(parse_line("1.2.3.0/24 ; SBL123"), Line::Value("1.2.3.0/24"));
    assert_eq!(parse_line("1.2.3.0/24;SBL123"), Line::Value("1.2.3.0/24"));
    assert_eq!(
        parse_line("\t2001:db8::/32  extra words"),
        Line::Value("2001:db8::/32")
    );
    assert_eq!(parse_line("192.0.2.1\r"), Line::Value("192.0.2.1"));
    assert_eq!(parse_line("\u{feff}192.0.2.1"), Line::Value("192.0.2.1"));
    for nothing in ["", "   ", "\r", "# x", "; Spamhaus DROP", "  #1.2.3.4"] {
        assert_eq!(parse_line(nothing), Line::Nothing, "{nothing:?}");
    }
}

#[test]
fn feed_with_comments_bad_lines_crlf_bom_and_ipv6() {
    let body = "\u{feff}; Spamhaus DROP List 2026/12/01\r\n\
                ; Last-Modified: Tue, 01 Dec 2026\r\n\
                1.10.16.0/20 ; SBL256894\r\n\
                # a comment\r\n\
                \r\n\
                not-an-address\r\n\
                192.0.2.77\r\n\
                10.1.2.3/8 ; host bits cleared\r\n\
                2001:DB8::/32\r\n\
                300.1.1.1\r\n\
                0.0.0.0/0\r\n\
                1.10.16.0/20\r\n\
                2001:db8:1::/48";
    let f = parse_feed(body.as_bytes()).unwrap();
    let texts: Vec<String> = f.values.iter().map(ToString::to_string).collect();
    assert_eq!(
        texts,
        [
            "1.10.16.0/20",
            "10.0.0.0/8",
            "192.0.2.77/32",
            "2001:db8::/32",
            "2001:db8:1::/48"
        ]
    );
    // not-an-address, 300.1.1.1 and 0.0.0.0/0 (shorter than min_prefix).
    assert_eq!(f.skipped, 3);
}

#[test]
fn long_lines_and_bad_utf8_are_skipped_not_fatal() {
    let mut body = b"192.0.2.1\n".to_vec();
    body.extend(std::iter::repeat_n(b'1', MAX_LINE * 3));
    body.extend_from_slice(b"\n\xff\xfe 1.2.3.4\n198.51.100.0/24");
    let f = parse_feed(&body).unwrap();
    assert_eq!(f.values.len(), 2);
    assert_eq!(f.skipped, 2);
}

#[test]
fn lines_split_across_reads() {
    // A reader that hands out one byte at a time: lines cross every buffer edge.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            match self.0.split_first() {
                Some((b, rest)) if !out.is_empty() => {
                    out[0] = *b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }
    let mut n = 0;
    let mut r = Trickle(b"192.0.2.1\r\n2001:db8::1 # x\r\n;c\r\n198.51.100.0/24");
    read_lines(&mut r, &mut |v| {
        assert!(v.is_ok(), "{v:?}");
        n += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(n, 3);
}

/// Issue 27 item 13 and issue 28: a gzip body nobody asked for, an HTML page and
/// random bytes are failures, not empty lists.
#[test]
fn bodies_that_are_no_list_fail() {
    let gz: &[u8] = &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, b'\n', 0xff, 0x10];
    let e = parse_feed(gz).unwrap_err();
    assert!(e.to_string().contains("gzip-compressed"), "{e}");
    let e = parse_feed(b"\n\n  <html><head>").unwrap_err();
    assert!(e.to_string().contains("an HTML page"), "{e}");
    let random: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let f = parse_feed(&random).and_then(some_valid);
    assert!(matches!(f, Err(SourceError::BadBody(_))), "{f:?}");
    assert!(some_valid(parse_feed(b"# only comments\n").unwrap()).is_ok());
}
