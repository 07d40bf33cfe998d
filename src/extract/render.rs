//! Blocks to markdown: headings, paragraphs, nested lists, code blocks, blockquotes, GFM tables.

use super::builder::{Block, Kind};

/// Rendered markdown, block by block.
pub type Markdown = Vec<String>;

/// Renders blocks while the markdown (`Markdown` joined by blank lines, as `Extract::markdown` does) fits in
/// `bytes_max`; whether some were left out for it. The cap is checked before each block and each table row is
/// added, so that no block can carry the markdown past it.
pub fn render(blocks: &[&Block], bytes_max: usize) -> (Markdown, bool) {
    let mut out: Markdown = Vec::with_capacity(blocks.len());
    let mut bytes = 0usize;
    let mut i = 0;
    while i < blocks.len() {
        let Some(b) = blocks.get(i) else { break };
        // The blank line before a new block.
        let separator = if out.is_empty() { 0 } else { 2 };
        if let Kind::Row { table, .. } = b.kind {
            // Consecutive rows of one table become one GFM table.
            let mut rows = Vec::new();
            while let Some(r) = blocks.get(i).filter(|r| matches!(r.kind, Kind::Row { table: t, .. } if t == table)) {
                rows.push(*r);
                i += 1;
            }
            let (table, cut) = table_md(&rows, bytes_max.saturating_sub(bytes + separator));
            if !table.is_empty() {
                bytes += separator + table.len();
                out.push(table);
            }
            if cut {
                return (out, true);
            }
            continue;
        }
        let text = match b.kind {
            Kind::Heading(level) => {
                format!("{} {}", "#".repeat(usize::from(level.clamp(1, 6))), b.md.replace('\n', " "))
            }
            Kind::Item { depth, ordered, index } => {
                let indent = "  ".repeat(usize::from(depth.saturating_sub(1)));
                let marker = if ordered { format!("{index}.") } else { "-".to_owned() };
                format!("{indent}{marker} {}", b.md)
            }
            Kind::Pre => format!("```\n{}\n```", b.md),
            Kind::Para | Kind::Row { .. } => b.md.clone(),
        };
        let text = if b.quote_depth > 0 {
            let prefix = "> ".repeat(usize::from(b.quote_depth));
            text.lines().map(|l| format!("{prefix}{l}")).collect::<Vec<_>>().join("\n")
        } else {
            text
        };
        // List items of one list are one markdown block: join them without a blank line.
        let joins = matches!(b.kind, Kind::Item { .. })
            && i > 0
            && blocks.get(i - 1).is_some_and(|p| matches!(p.kind, Kind::Item { .. }));
        let cost = text.len() + if joins { 1 } else { separator };
        if bytes + cost > bytes_max {
            return (out, true);
        }
        bytes += cost;
        match out.last_mut().filter(|_| joins) {
            Some(prev) => {
                prev.push('\n');
                prev.push_str(&text);
            }
            None => out.push(text),
        }
        i += 1;
    }
    (out, false)
}

/// One GFM table, its rows padded to the widest, within `bytes_max`: rows that would not fit are left out (and it
/// says so); a table whose header does not fit is empty.
fn table_md(rows: &[&Block], bytes_max: usize) -> (String, bool) {
    let width = rows.iter().map(|r| r.cells.len()).max().unwrap_or(1).max(1);
    let line = |cells: &[String]| {
        let mut v: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        v.resize(width, String::new());
        format!("| {} |", v.join(" | "))
    };
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let mut text = line(&r.cells);
        if i == 0 {
            text.push_str(&format!("\n|{}", " --- |".repeat(width)));
        }
        let cost = text.len() + usize::from(i > 0);
        if out.len() + cost > bytes_max {
            return (out, true);
        }
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&text);
    }
    (out, false)
}
