//! SearXNG's other formats of the same answer: `csv` (a header row, then one row per result, as SearXNG's
//! `write_csv_response` writes them: `title,url,content,host,engine,score,type`, quoted where needed, CRLF; a cell
//! that would be a formula starts with `'`) and `rss` (an RSS 2.0 channel with OpenSearch's response elements, as
//! SearXNG's `opensearch_response_rss.xml`).

use serde_json::Value;

use super::page::escape;
use crate::http::Response;
use crate::search::url::form_encode;

fn results(answer: &Value) -> Vec<Value> {
    answer.get("results").and_then(Value::as_array).cloned().unwrap_or_default()
}

fn text<'a>(r: &'a Value, k: &str) -> &'a str {
    r.get(k).and_then(Value::as_str).unwrap_or("")
}

/// The answer as CSV.
pub fn csv(answer: &Value) -> Response {
    let mut out = String::from("title,url,content,host,engine,score,type\r\n");
    for r in results(answer) {
        let host = r.pointer("/parsed_url/1").and_then(Value::as_str).unwrap_or("");
        // Python's repr of a float, as SearXNG's csv writer prints the score: 1.0, 0.5.
        let score = format!("{:?}", r.get("score").and_then(Value::as_f64).unwrap_or(0.0));
        let row = [text(&r, "title"), text(&r, "url"), text(&r, "content"), host, text(&r, "engine"), &score, "result"];
        let cells: Vec<String> = row.iter().map(|c| csv_cell(c)).collect();
        out.push_str(&cells.join(","));
        out.push_str("\r\n");
    }
    let query = form_encode(text(answer, "query"));
    Response::new(200, "application/csv; charset=utf-8", out)
        .header("Content-Disposition", format!("attachment;Filename=searx_-_{query}.csv"))
        .header("Cache-Control", "no-store")
}

/// A cell as Python's csv module writes it (QUOTE_MINIMAL): quoted when it holds a comma, a quote or a line break,
/// its quotes doubled. A cell a spreadsheet would read as a formula (one that starts with `=`, `+`, `-`, `@`, a tab
/// or a carriage return: `=cmd|' /C calc'!A0`, `+HYPERLINK(...)`) starts with a `'` first, OWASP's rule against CSV
/// injection (SearXNG writes it as is).
fn csv_cell(cell: &str) -> String {
    let cell = if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{cell}") } else { cell.to_owned() };
    if cell.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", cell.replace('"', "\"\""))
    } else {
        cell
    }
}

/// The answer as an RSS 2.0 channel.
pub fn rss(answer: &Value, base: &str) -> Response {
    let query = text(answer, "query");
    let list = results(answer);
    let mut out = String::with_capacity(1_024 + list.len() * 512);
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\" ");
    out.push_str(
        "xmlns:opensearch=\"http://a9.com/-/spec/opensearch/1.1/\" xmlns:atom=\"http://www.w3.org/2005/Atom\">\n",
    );
    out.push_str("<channel>\n");
    out.push_str(&format!("<title>websearchd search: {}</title>\n", escape(query)));
    out.push_str(&format!("<link>{}/search?q={}</link>\n", escape(base), escape(&form_encode(query))));
    out.push_str(&format!("<description>Search results for \"{}\" - websearchd</description>\n", escape(query)));
    out.push_str(&format!("<opensearch:totalResults>{}</opensearch:totalResults>\n", list.len()));
    out.push_str("<opensearch:startIndex>1</opensearch:startIndex>\n");
    out.push_str(&format!("<opensearch:itemsPerPage>{}</opensearch:itemsPerPage>\n", list.len()));
    out.push_str(&format!(
        "<atom:link rel=\"search\" type=\"application/opensearchdescription+xml\" href=\"{}/opensearch.xml\"/>\n",
        escape(base)
    ));
    out.push_str(&format!("<opensearch:Query role=\"request\" searchTerms=\"{}\" startPage=\"1\"/>\n", escape(query)));
    for r in &list {
        out.push_str("<item>\n");
        out.push_str(&format!("<title>{}</title>\n<type>result</type>\n", escape(text(r, "title"))));
        out.push_str(&format!("<link>{}</link>\n", escape(text(r, "url"))));
        out.push_str(&format!("<description>{}</description>\n", escape(text(r, "content"))));
        if let Some(date) = r.get("publishedDate").and_then(Value::as_str) {
            out.push_str(&format!("<pubDate>{}</pubDate>\n", escape(&date.replace('T', " "))));
        }
        out.push_str("</item>\n");
    }
    out.push_str("</channel>\n</rss>\n");
    Response::new(200, "application/rss+xml; charset=utf-8", out).header("Cache-Control", "no-store")
}

#[cfg(test)]
mod tests {
    use super::csv_cell;

    /// Python's csv writer (QUOTE_MINIMAL): plain cells stay, others are quoted with their quotes doubled.
    #[test]
    fn cells_are_quoted_as_pythons_csv_quotes_them() {
        assert_eq!(csv_cell("plain text"), "plain text");
        assert_eq!(csv_cell("a, b"), "\"a, b\"");
        assert_eq!(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_cell("two\nlines"), "\"two\nlines\"");
    }

    /// OWASP's rule against CSV injection: a cell that starts as a formula starts with `'`; others stay.
    #[test]
    fn formula_cells_start_with_a_quote() {
        for (cell, written) in [
            ("=1+1", "'=1+1"),
            ("+1", "'+1"),
            ("-1", "'-1"),
            ("@A1", "'@A1"),
            ("\t=1", "'\t=1"),
            ("\r=1", "\"'\r=1\""),
            ("=HYPERLINK(\"x\",\"y\")", "\"'=HYPERLINK(\"\"x\"\",\"\"y\"\")\""),
            ("a=1", "a=1"),
            ("1.0", "1.0"),
        ] {
            assert_eq!(csv_cell(cell), written, "{cell:?}");
        }
    }
}
