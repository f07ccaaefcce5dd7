//! Values PostgreSQL stores differently from the other stores: `TEXT` cannot hold U+0000, so a
//! NUL in a caller-supplied value is stored as U+FFFD instead of failing the whole batch, and a
//! query with the same value still finds the record.

use switchboard_audit::{AuditQuery, AuditStore};

use crate::common::{record, test_store};

#[test]
fn a_nul_in_a_caller_supplied_value_is_stored_as_the_replacement_character() {
    let test = test_store();
    let mut nul = record("trace\0id");
    nul.tool = "tool\0name".into();
    let mut batch = vec![record("plain"), nul, record("plain")];
    test.store()
        .append_batch(&mut batch)
        .expect("a NUL does not fail the batch");
    let found = test
        .store()
        .query(&AuditQuery::correlation("trace\0id").tool("tool\0name"))
        .expect("query");
    assert_eq!(found.len(), 1);
    assert_eq!(&*found[0].tool, "tool\u{FFFD}name");
    assert_eq!(
        found[0].correlation_id.as_ref().map(|id| id.as_str()),
        Some("trace\u{FFFD}id")
    );
    assert_eq!(found[0].id, batch[1].id);
    assert_eq!(
        test.store().query(&AuditQuery::all()).expect("query").len(),
        3
    );
}
