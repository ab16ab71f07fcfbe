//! Each HCL text parsed once per thread: one command reads a module's files for its
//! lints, its interface and the modules it calls, and each of them used to parse the
//! same text again (three parses of every file in a `check`). Bodies are kept by
//! their whole text, so two files alike share one; a text that does not parse is
//! parsed again by whoever asks, to report its error.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use hcl_edit::structure::Body;

/// How much text the bodies kept may have been parsed from, in all; past it they are
/// forgotten and kept anew, so a long-lived process does not grow without end.
const KEPT_TEXT: usize = 64 << 20;

#[derive(Default)]
struct Kept {
    bodies: HashMap<Box<str>, Rc<Body>>,
    text: usize,
}

thread_local! {
    static KEPT: RefCell<Kept> = RefCell::new(Kept::default());
}

/// `text` parsed as an HCL body, once per thread.
pub fn hcl_body(text: &str) -> Result<Rc<Body>, hcl_edit::parser::Error> {
    if let Some(body) = KEPT.with(|kept| kept.borrow().bodies.get(text).cloned()) {
        return Ok(body);
    }
    let body = Rc::new(hcl_edit::parser::parse_body(text)?);
    KEPT.with(|kept| {
        let mut kept = kept.borrow_mut();
        if kept.text + text.len() > KEPT_TEXT {
            *kept = Kept::default();
        }
        kept.text += text.len();
        kept.bodies.insert(text.into(), body.clone());
    });
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::hcl_body;
    use std::rc::Rc;

    #[test]
    fn a_text_is_parsed_once_and_an_error_each_time_it_is_asked() {
        let text = "variable \"a\" {\n  type = string\n}\n";
        let first = hcl_body(text).unwrap();
        // Another allocation of the same text: found by its content.
        let copy = String::from(text);
        let second = hcl_body(&copy).unwrap();
        assert!(Rc::ptr_eq(&first, &second));
        assert_eq!(first.blocks().count(), 1);
        assert!(hcl_body("variable {").is_err());
        assert!(hcl_body("variable {").is_err());
    }
}
