//! Blocks to markdown: headings, paragraphs, nested lists, code blocks, blockquotes, GFM tables.

use super::builder::{Block, Kind};

/// Rendered markdown, block by block.
pub type Markdown = Vec<String>;

pub fn render(blocks: &[&Block]) -> Markdown {
    let mut out: Markdown = Vec::with_capacity(blocks.len());
    let mut i = 0;
    while i < blocks.len() {
        let Some(b) = blocks.get(i) else { break };
        if let Kind::Row { table, .. } = b.kind {
            // Consecutive rows of one table become one GFM table.
            let mut rows = Vec::new();
            while let Some(r) = blocks.get(i).filter(|r| matches!(r.kind, Kind::Row { table: t, .. } if t == table)) {
                rows.push(*r);
                i += 1;
            }
            out.push(table_md(&rows));
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
                prev.push('\n');
                prev.push_str(&text);
            }
            _ => out.push(text),
        }
        i += 1;
    }
    out
}

fn table_md(rows: &[&Block]) -> String {
    let width = rows.iter().map(|r| r.cells.len()).max().unwrap_or(1).max(1);
    let line = |cells: &[String]| {
        let mut v: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        v.resize(width, String::new());
        format!("| {} |", v.join(" | "))
    };
    let mut out = Vec::with_capacity(rows.len() + 1);
    for (i, r) in rows.iter().enumerate() {
        out.push(line(&r.cells));
        if i == 0 {
            out.push(format!("|{}", " --- |".repeat(width)));
        }
    }
    out.join("\n")
}
