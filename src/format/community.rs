//! BGP communities that the `bird` format's routes carry (`bgp_community`): a
//! standard community `ASN:VALUE` (two 16-bit numbers, RFC 1997) or a large one
//! `ASN:DATA1:DATA2` (three 32-bit numbers, RFC 8092).

use std::fmt;
use std::str::FromStr;

use super::BadValue;

/// One community.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Community {
    /// `65000:100`.
    Standard(u16, u16),
    /// `65000:1:100`.
    Large(u32, u32, u32),
}

impl FromStr for Community {
    type Err = BadValue;
    fn from_str(s: &str) -> Result<Self, BadValue> {
        let bad = |why: &str| {
            BadValue(format!(
                "invalid BGP community {s:?}: {why} (a standard community is ASN:VALUE, \
                 two numbers 0 to 65535, e.g. 65000:100; a large one ASN:DATA:DATA, three \
                 numbers 0 to 4294967295, e.g. 65000:1:100)"
            ))
        };
        // Digits only: `u32::from_str` would take "+1".
        let parts: Vec<&str> = s.split(':').collect();
        if parts
            .iter()
            .any(|p| p.is_empty() || p.len() > 10 || !p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(bad("each part is a decimal number"));
        }
        match parts[..] {
            [a, v] => match (a.parse(), v.parse()) {
                (Ok(a), Ok(v)) => Ok(Community::Standard(a, v)),
                _ => Err(bad("a standard community's parts are 16-bit")),
            },
            [a, d1, d2] => match (a.parse(), d1.parse(), d2.parse()) {
                (Ok(a), Ok(d1), Ok(d2)) => Ok(Community::Large(a, d1, d2)),
                _ => Err(bad("a large community's parts are 32-bit")),
            },
            _ => Err(bad("two or three parts separated by ':'")),
        }
    }
}

impl fmt::Display for Community {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Community::Standard(a, v) => write!(f, "{a}:{v}"),
            Community::Large(a, d1, d2) => write!(f, "{a}:{d1}:{d2}"),
        }
    }
}

impl Community {
    /// What a BIRD 2 static route's attribute block adds:
    /// `bgp_community.add((65000,100));`.
    pub fn bird_add(&self) -> String {
        match self {
            Community::Standard(a, v) => format!("bgp_community.add(({a},{v}));"),
            Community::Large(a, d1, d2) => {
                format!("bgp_large_community.add(({a},{d1},{d2}));")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses() {
        assert_eq!("65000:100".parse(), Ok(Community::Standard(65000, 100)));
        assert_eq!("0:0".parse(), Ok(Community::Standard(0, 0)));
        assert_eq!(
            "4200000000:1:4294967295".parse(),
            Ok(Community::Large(4_200_000_000, 1, u32::MAX))
        );
        assert_eq!(
            "65000:1:100".parse::<Community>().unwrap().to_string(),
            "65000:1:100"
        );
        for bad in [
            "65536:1",
            "65000:65536",
            "4200000000:1",
            "4294967296:1:1",
            "65000",
            "1:2:3:4",
            "a:1",
            "+1:2",
            "1:",
            ":1",
            "",
            "1 :2",
            "99999999999:1:1",
        ] {
            let e = bad.parse::<Community>().unwrap_err().0;
            assert!(e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }
        let e = "65536:1".parse::<Community>().unwrap_err().0;
        assert!(e.contains("16-bit"), "{e}");
    }

    #[test]
    fn bird_lines() {
        let s: Community = "65000:100".parse().unwrap();
        assert_eq!(s.bird_add(), "bgp_community.add((65000,100));");
        let l: Community = "65000:1:100".parse().unwrap();
        assert_eq!(l.bird_add(), "bgp_large_community.add((65000,1,100));");
    }
}
