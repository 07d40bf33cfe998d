//! Blocks to markdown: headings, paragraphs, nested lists, code blocks, blockquotes, GFM tables.

use super::builder::{Block, Kind};

/// Rendered markdown, block by block.
pub type Markdown = Vec<String>;

/// Renders blocks until the markdown reaches `bytes_max`; whether some were left out for it.
pub fn render(blocks: &[&Block], bytes_max: usize) -> (Markdown, bool) {
    let mut out: Markdown = Vec::with_capacity(blocks.len());
    let mut bytes = 0usize;
    let mut i = 0;
    while i < blocks.len() {
        let Some(b) = blocks.get(i) else { break };
        if bytes >= bytes_max {
            return (out, true);
        }
        if let Kind::Row { table, .. } = b.kind {
            // Consecutive rows of one table become one GFM table.
            let mut rows = Vec::new();
            while let Some(r) = blocks.get(i).filter(|r| matches!(r.kind, Kind::Row { table: t, .. } if t == table)) {
                rows.push(*r);
                i += 1;
            }
            let (table, cut) = table_md(&rows, bytes_max - bytes);
            bytes += table.len();
            out.push(table);
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
        match (b.kind, out.last_mut()) {
            (Kind::Item { .. }, Some(prev))
                if i > 0 && blocks.get(i - 1).is_some_and(|p| matches!(p.kind, Kind::Item { .. })) =>
            {
                bytes += text.len() + 1;
                prev.push('\n');
                prev.push_str(&text);
            }
            _ => {
                bytes += text.len();
                out.push(text);
            }
        }
        i += 1;
    }
    (out, false)
}

/// One GFM table, its rows padded to the widest; rows past `bytes_max` are left out (and it says so).
fn table_md(rows: &[&Block], bytes_max: usize) -> (String, bool) {
    let width = rows.iter().map(|r| r.cells.len()).max().unwrap_or(1).max(1);
    let line = |cells: &[String]| {
        let mut v: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        v.resize(width, String::new());
        format!("| {} |", v.join(" | "))
    };
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        if out.len() >= bytes_max {
            return (out, true);
        }
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&line(&r.cells));
        if i == 0 {
            out.push_str(&format!("\n|{}", " --- |".repeat(width)));
        }
    }
    (out, false)
}
