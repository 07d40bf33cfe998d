//! Rules for forum threads and Q&A pages (pages whose own types say so, see `signals::PageKind::Forum`).

use super::builder::{Page, NO_NODE};

/// The region grown to hold every post the page marks up as one (`itemprop="text"`, see `Node::post`) outside
/// boilerplate: the innermost container holding `best` and all of them. A question is shorter than its answers
/// and scores less, so the region chosen by score can hold the answers alone. Linear: one pass for the depths,
/// then at most `DEPTH_MAX` steps up per post.
pub fn thread_region(page: &Page, best: usize) -> usize {
    let mut depth = vec![0u32; page.nodes.len()];
    for (i, n) in page.nodes.iter().enumerate() {
        let d = depth.get(n.parent as usize).filter(|_| (n.parent as usize) < i).map_or(0, |d| d + 1);
        if let Some(x) = depth.get_mut(i) {
            *x = d;
        }
    }
    let parent = |i: usize| page.nodes.get(i).map(|n| n.parent).filter(|&p| p != NO_NODE).map(|p| p as usize);
    let depth_of = |i: usize| depth.get(i).copied().unwrap_or(0);
    let mut region = best;
    for (i, n) in page.nodes.iter().enumerate() {
        if !n.post || n.boiler && !n.content {
            continue;
        }
        let (mut a, mut b) = (region, i);
        for _ in 0..2 * super::DEPTH_MAX {
            if a == b {
                break;
            }
            let up = if depth_of(a) >= depth_of(b) { &mut a } else { &mut b };
            match parent(*up) {
                Some(p) => *up = p,
                // Two trees (an element closed early): the region stays as it was.
                None => {
                    b = region;
                    a = region;
                }
            }
        }
        region = a;
    }
    region
}

/// Whether the page is a question with answers (schema.org `QAPage`) whose posts are marked up outside any
/// comments section: its posts are the question and the answers, and the comments under them are remarks on a
/// post (short asides, thanks, requests to clarify), not posts, so a comments section stays out as on an article.
/// (A Q&A page that marks up no post may hold its answers in a region named comments.)
pub fn comments_are_remarks(page: &Page) -> bool {
    page.signals.has(&["qapage"]) && page.nodes.iter().any(|n| n.post && !n.boiler)
}

#[cfg(test)]
mod tests {
    use crate::extract::{Extractor, Options};

    /// A Q&A page: a short question, long answers, each post's text marked up, comments under the posts.
    fn qa_page(question_type: &str) -> String {
        let para = |s: &str| {
            format!("<p>{s}, which is said here at some length, with commas, details, and a reason or two.</p>")
        };
        let answer = |text: &str, remark: &str| {
            format!(
                "<div class=\"answer\" itemscope itemtype=\"https://schema.org/Answer\"><div class=\"post-layout\">\
                 <div class=\"postcell\"><div class=\"prose\" itemprop=\"text\">{}{}{}</div></div>\
                 <div class=\"comments\"><ul><li class=\"comment\" itemtype=\"https://schema.org/Comment\">\
                 <span itemprop=\"text\">{remark}</span></li></ul></div></div></div>",
                para(text),
                para("A second paragraph of the answer follows"),
                para("A third paragraph ends the answer")
            )
        };
        format!(
            "<html><head><title>How do I reef a sail?</title></head><body itemscope itemtype=\"https://schema.org/{question_type}\">\
             <nav><a href=\"/\">Home</a></nav><div id=\"mainbar\"><div class=\"question\"><div class=\"post-layout\">\
             <div class=\"postcell\"><div class=\"prose\" itemprop=\"text\"><p>My sail is too big in a breeze: \
             how do I reef it, step by step?</p></div></div></div><div class=\"comments\"><ul><li class=\"comment\">\
             <span itemprop=\"text\">Which boat is it, a dinghy or a keelboat with slab reefing lines?</span>\
             </li></ul></div></div><div id=\"answers\">{}{}{}</div></div></body></html>",
            answer("Ease the main sheet and the kicker first, then lower the halyard", "Thanks, that worked well for me today."),
            answer("On a dinghy, roll the sail around the boom", "Rolling creases the sail, I would not do that."),
            answer("Slab reefing pulls a cringle down to the boom", "The pennant should be led aft to the cockpit."),
        )
    }

    #[test]
    fn a_question_is_kept_beside_longer_answers_and_remarks_stay_out() {
        let md = Extractor::run(qa_page("QAPage").as_bytes(), Options::default()).markdown();
        assert!(md.contains("how do I reef it, step by step?"), "{md}");
        assert!(md.contains("Ease the main sheet") && md.contains("cringle down to the boom"), "{md}");
        assert!(!md.contains("Thanks, that worked") && !md.contains("Which boat is it"), "{md}");
    }
}
