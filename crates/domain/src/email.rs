//! E-mail addresses as the product stores them: trimmed, lower-cased, and plausibly deliverable.

/// The normalised form of `raw`, or `None` when it is not an e-mail address.
///
/// The check is deliberately practical rather than RFC 5321-complete: one `@`, a local part of
/// printable characters without spaces or quotes, and a domain of dot-separated labels (letters,
/// digits, hyphens, not at a label's ends) ending in a top-level label of two or more letters.
pub fn normalise(raw: &str) -> Option<String> {
    let email = raw.trim().to_lowercase();
    if email.len() > 254 {
        return None;
    }
    let (local, domain) = email.split_once('@')?;
    if local.is_empty() || local.len() > 64 || domain.contains('@') {
        return None;
    }
    let local_ok = local
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+/=?^_`{|}~.-".contains(c))
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..");
    if !local_ok {
        return None;
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if labels.len() < 2 {
        return None;
    }
    let label_ok = |l: &&str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    };
    if !labels.iter().all(label_ok) {
        return None;
    }
    let tld = labels.last()?;
    if tld.len() < 2 || !tld.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    Some(email)
}

#[cfg(test)]
mod tests {
    use super::normalise;

    #[test]
    fn normalises() {
        assert_eq!(
            normalise("  Mario.Rossi+fast@Example.IT ").as_deref(),
            Some("mario.rossi+fast@example.it")
        );
        assert_eq!(normalise("a@b.co").as_deref(), Some("a@b.co"));
    }

    #[test]
    fn rejects() {
        for bad in [
            "",
            "plain",
            "@example.com",
            "a@",
            "a@b",
            "a@@b.com",
            "a b@c.com",
            "a@b..com",
            ".a@b.com",
            "a.@b.com",
            "a..b@c.com",
            "a@-b.com",
            "a@b-.com",
            "a@b.c",
            "a@b.c0m",
            "\"q\"@b.com",
            "a@b_c.com",
        ] {
            assert_eq!(normalise(bad), None, "{bad:?}");
        }
        assert_eq!(normalise(&format!("{}@b.com", "a".repeat(65))), None);
    }
}
