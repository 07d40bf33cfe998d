use super::*;

#[test]
fn plain_text_of_markdown() {
    let md = "# Title\n\nSome **bold** and `code` with a [link](https://x.example/a_(b)) and ![alt](i.png).\n\n\
              > quoted\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```rust\nlet x = 1;\n```\n\n1\\. not a list";
    assert_eq!(
        plain(md),
        "Title\n\nSome bold and code with a link and alt.\n\nquoted\n\na | b\n1 | 2\n\nlet x = 1;\n\n1. not a list"
    );
    assert_eq!(plain("snake_case stays"), "snake_case stays");
    // Emphasis is dropped where it pairs; a mark that pairs with nothing is the page's text.
    assert_eq!(
        plain("The \\_\\_init__ method, *real* and _this_ and **bold**"),
        "The __init__ method, real and this and bold"
    );
    assert_eq!(plain("a * b * c, 2*3, x_y_z, [not a link] and ]"), "a * b * c, 2*3, x_y_z, not a link and ]");
}

#[test]
fn passages_are_the_pages_own_words_best_first() {
    let md = "# Runtime\n\nIntro about nothing.\n\nThe tokio runtime spawns tasks on worker threads. It is fast.\n\n\
              Unrelated closing words.\n\n- tokio spawn example";
    let got = passages(md, "tokio spawn", 2);
    assert_eq!(got.len(), 2);
    for p in &got {
        assert!(md.contains(p.as_str()), "{p}");
    }
    assert!(got.iter().any(|p| p.contains("spawns tasks")));
    assert!(passages(md, "zzz qqq", 3).is_empty());
    let pages = vec![json!({ "status": "ok", "markdown": md }), json!({ "status": "timeout" })];
    let answer = answer_of(&pages, "tokio spawn").unwrap();
    assert!(plain(md).contains(&answer), "{answer}");
    assert_eq!(answer_of(&pages, "zzz"), None);
}

#[test]
fn errors_are_tavilys_shape() {
    let e = ApiError::invalid_field("field_unknown", "x", "the field `x` is not read").header("Retry-After", "1");
    let response = error_response(e);
    assert_eq!(response.status, 400);
    let body: Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(
        body,
        json!({ "detail": { "error": "the field `x` is not read", "code": "field_unknown", "field": "x" } })
    );
}
