//! Rules for forum threads and Q&A pages (pages whose own types say so, see `signals::PageKind::Forum`).

use super::builder::{contains_ignore_ascii_case, ends_ignore_ascii_case, Block, Kind, Page};

/// The region grown to hold every post the page marks up as one (`itemprop="text"`, see `Node::post`) outside
/// boilerplate: the innermost container holding `best` and all of them. A question is shorter than its answers
/// and scores less, so the region chosen by score can hold the answers alone.
pub fn thread_region(page: &Page, best: usize) -> usize {
    let posts = page.nodes.iter().enumerate().filter(|(_, n)| n.post && (!n.boiler || n.content)).map(|(i, _)| i);
    page.common_ancestor(best, posts)
}

/// Whether the page is a question with answers (schema.org `QAPage`) whose posts are marked up outside any
/// comments section: its posts are the question and the answers, and the comments under them are remarks on a
/// post (short asides, thanks, requests to clarify), not posts, so a comments section stays out as on an article.
/// (A Q&A page that marks up no post may hold its answers in a region named comments.)
pub fn comments_are_remarks(page: &Page) -> bool {
    page.signals.has(&["qapage"]) && page.nodes.iter().any(|n| n.post && !n.boiler)
}

/// Comments of some length (`REPLY_CHARS_MIN`) a page holds at least for them to make it a discussion.
const REPLIES_MIN: usize = 5;

/// Characters of a comment's paragraph that count it towards `REPLIES_MIN` (not a "Thanks!" or a vote count).
const REPLY_CHARS_MIN: u32 = 25;

/// Whether a page's comments (blocks inside a comments section or its parts, not otherwise boilerplate: see
/// `Block::plain`) hold more body text (paragraphs, items, code and rows, mostly not links) than its other clean
/// blocks, in at least `REPLIES_MIN` paragraphs: a discussion of a short post or of a link (a link aggregator's
/// story, a news forum's thread, a forum software's replies marked up as comments), whose comments are what it is
/// read for, not an article with its readers' remarks under it. One pass over the blocks.
pub fn replies_outweigh(blocks: &[Block]) -> bool {
    let (mut replies, mut rest, mut long) = (0u64, 0u64, 0usize);
    for b in blocks {
        if !matches!(b.kind, Kind::Para | Kind::Item { .. } | Kind::Pre | Kind::Row { .. })
            || u64::from(b.link_len) * 10 >= u64::from(b.text_len) * 3
        {
            continue;
        }
        if b.boiler && !b.plain.0 {
            replies += u64::from(b.text_len);
            long += usize::from(b.text_len >= REPLY_CHARS_MIN);
        } else if !b.boiler || b.content {
            rest += u64::from(b.text_len);
        }
    }
    long >= REPLIES_MIN && replies > rest
}

/// Posts marked up (see `Node::post`) that make a thread's markup trustworthy enough to end it at its last post.
const MARKED_POSTS_MIN: usize = 2;

/// Drops the kept blocks after the last one inside a marked-up post (the reply box's prompt, "not the answer you
/// are looking for?", a list of other threads), when the page marks up at least `MARKED_POSTS_MIN` posts.
/// Linear: one pass over the containers, one over the kept blocks.
pub fn end_at_last_post(page: &Page, keep: &mut Vec<usize>) {
    let mut in_post = vec![false; page.nodes.len()];
    let mut posts = 0;
    for (i, n) in page.nodes.iter().enumerate() {
        let up = (n.parent as usize) < i && in_post.get(n.parent as usize).copied().unwrap_or(false);
        posts += usize::from(n.post && !up);
        if let Some(x) = in_post.get_mut(i) {
            *x = n.post || up;
        }
    }
    if posts < MARKED_POSTS_MIN {
        return;
    }
    let inside = |b: usize| {
        page.blocks
            .get(b)
            .and_then(|b| b.path.first())
            .is_some_and(|&n| in_post.get(n as usize).copied().unwrap_or(false))
    };
    if let Some(last) = keep.iter().rposition(|&b| inside(b)) {
        keep.truncate(last + 1);
    }
}

/// Class tokens (whole, any case) that forum software gives the element holding one post's text: phpBB's
/// `postbody`, punBB's and FluxBB's `postmsg`, MyBB's `post_body`, vBulletin's `postcontent`, XenForo's `bbWrapper`
/// and `messageText`, Reddit's `usertext-body`.
const POST_CLASSES: &[&str] =
    &["postbody", "postmsg", "post_body", "postcontent", "bbwrapper", "messagetext", "usertext-body"];

/// Id prefixes that forum software follows with the post's number on the element holding its text: vBulletin's
/// `post_message_123`, phpBB's `post_content123`.
const POST_ID_PREFIXES: &[&str] = &["post_message_", "post_content"];

/// Whether a class or id token marks the element holding one post's text the way forum software does (see
/// `POST_CLASSES`, `POST_ID_PREFIXES`; Invision's `data-role="commentContent"` is `builder`'s). Asked through
/// `builder::Words`'s memory.
pub fn post_token(t: &str) -> bool {
    POST_CLASSES.iter().any(|c| t.eq_ignore_ascii_case(c))
        || POST_ID_PREFIXES.iter().any(|p| {
            t.get(..p.len()).is_some_and(|s| s.eq_ignore_ascii_case(p))
                && t.len() > p.len()
                && t.bytes().skip(p.len()).all(|b| b.is_ascii_digit())
        })
}

/// Class words of what a forum shows beside a post about its poster: a signature (`signature`,
/// `message-signature`, `post-signature`), the poster's statistics (XenForo's `message-userExtras`, vBulletin's
/// `userinfo_extra`, `user-stats`) and title (`userTitle`). Not a post that has one (`with-signature`).
const POSTER_WORDS: &[&str] =
    &["signature", "userextras", "user-extras", "userinfo_extra", "userstats", "user-stats", "usertitle", "user-title"];

/// Class words of a poster's card beside each post (its rank, banner, join date and counts), matched at a class
/// token's end only: XenForo's `message-userDetails` and `message-userBanner`, phpBB's `postprofile`, Invision's
/// `cAuthorPane_info`, `MessageCard__user-details`; not the name inside it (`MessageCard__user-info__name`).
const POSTER_END_WORDS: &[&str] = &[
    "userdetails",
    "user-details",
    "userinfo",
    "user-info",
    "userbanner",
    "user-banner",
    "postprofile",
    "authorpane_info",
    "authorpane_stats",
];

/// What every one of `POSTER_WORDS` holds: most tokens hold neither, and are passed over after two scans.
const POSTER_PREFILTER: &[&str] = &["user", "signature"];

/// Bytes of a class token looked at for `POSTER_WORDS` (longer tokens are not a poster's details).
const POSTER_TOKEN_BYTES_MAX: usize = 48;

/// Whether a class token names a poster's details (see `POSTER_WORDS`); no allocation, tokens shorter than the
/// shortest word are passed over. Asked of every container's class tokens, through `builder::Words`'s memory.
pub fn poster_token(t: &str) -> bool {
    let starts = |p: &str| t.get(..p.len()).is_some_and(|s| s.eq_ignore_ascii_case(p));
    (8..=POSTER_TOKEN_BYTES_MAX).contains(&t.len())
        && !starts("with")
        && !starts("has")
        && !starts("no-")
        && (POSTER_PREFILTER.iter().any(|w| contains_ignore_ascii_case(t.as_bytes(), w.as_bytes()))
            && POSTER_WORDS.iter().any(|w| contains_ignore_ascii_case(t.as_bytes(), w.as_bytes()))
            || POSTER_END_WORDS.iter().any(|w| ends_ignore_ascii_case(t.as_bytes(), w.as_bytes())))
}

/// On a thread, a poster's signature, title and statistics are not the posts: boilerplate.
pub fn leave_poster_details_out(page: &mut Page) {
    let Page { blocks, nodes, .. } = page;
    for b in blocks.iter_mut() {
        if b.path.first().is_some_and(|&n| nodes.get(n as usize).is_some_and(|n| n.poster)) {
            (b.boiler, b.content) = (true, false);
        }
    }
}

/// What forum software counts beside a post or a thread, as the noun of a count alone on its line ("7 Likes",
/// "19 Answers", "Replies: 56", "14 participants", MyBB's "Posts: 1,077", "Threads: 23" and "Reputation: 7").
const COUNTED: &[&str] = &[
    "like",
    "likes",
    "answer",
    "answers",
    "reply",
    "replies",
    "view",
    "views",
    "participant",
    "participants",
    "post",
    "posts",
    "thread",
    "threads",
    "comment",
    "comments",
    "vote",
    "votes",
    "point",
    "points",
    "reaction",
    "reactions",
    "message",
    "messages",
    "reputation",
];

/// How a line of a post's furniture opens, in any case: XenForo's and phpBB's edit notes ("Last edited: Jul 9,
/// 2022", "Last edited by ann on ..."), XenForo's reactions bar ("Reactions: bob, cat and 3 others"), vBulletin's,
/// MyBB's and others' poster details ("Join Date: Mar 2016", "Joined: ...", "Registered: ...").
const FURNITURE_LABELS: &[&str] = &["last edited", "reactions:", "join date:", "joined:", "registered:"];

/// Words of a line that opens with one of `FURNITURE_LABELS` (a longer one is a post that happens to start so).
const FURNITURE_LABEL_WORDS_MAX: usize = 12;

/// Lines (any case, without their punctuation) that forum software prints about a post or a thread: a poster's
/// state (phpBB's and FluxBB's "Offline"), a post's role ("Thread starter", "Original poster"), a quote's or a
/// long post's button, a closed thread's status, Invision's heading over the replies.
const FURNITURE_LINES: &[&str] = &[
    "offline",
    "online",
    "quote",
    "thread starter",
    "original poster",
    "click to expand",
    "status",
    "not open for further replies",
    "featured replies",
    "sort by",
];

/// What the path of a tag's page holds: a link alone on its line to one is one of the thread's tags (Stack
/// Exchange's `/questions/tagged/python`, Discourse's `/tag/`, XenForo's and Invision's `/tags/`).
const TAG_PATHS: &[&str] = &["/tagged/", "/tag/", "/tags/"];

/// Whether a line is one link, to a tag's page (see `TAG_PATHS`).
fn tag_link(line: &str) -> bool {
    let line = line.trim();
    line.strip_prefix('[').and_then(|l| l.strip_suffix(')')).and_then(|l| l.split_once("](")).is_some_and(
        |(text, href)| {
            !text.contains(']') && !href.contains(char::is_whitespace) && TAG_PATHS.iter().any(|p| href.contains(p))
        },
    )
}

/// Characters of a block looked at for furniture: a longer block is something a poster wrote.
const FURNITURE_CHARS_MAX: u32 = 160;

/// Characters of a count ("1,077", "4.2k"); a longer number is data, not a counter.
const COUNT_CHARS_MAX: usize = 9;

/// Whether a word is a count as forums print them: digits with group or decimal marks, a `k` or `m` after.
fn is_count(w: &str) -> bool {
    let digits = w.strip_suffix(['k', 'K', 'm', 'M']).unwrap_or(w);
    w.len() <= COUNT_CHARS_MAX
        && digits.starts_with(|c: char| c.is_ascii_digit())
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b',' || b == b'.')
}

/// Whether one line is a thread's furniture: a count alone, a link to a tag, a labelled line of edit notes,
/// reactions or poster details, or one of `FURNITURE_LINES`.
fn furniture_line(line: &str) -> bool {
    // A word's link target is not a word (`[**7**](https://...)` is the count 7).
    let mut words = line
        .split_whitespace()
        .map(|w| w.split("](").next().unwrap_or(w).trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty());
    let (first, second, third) = (words.next(), words.next(), words.next());
    let counted = |w: &str| COUNTED.iter().any(|c| w.eq_ignore_ascii_case(c));
    let count = match (first, second, third) {
        (Some(a), None, _) => is_count(a),
        (Some(a), Some(b), None) => is_count(a) && counted(b) || counted(a) && is_count(b),
        _ => false,
    };
    let bare = line.trim_matches(|c: char| !c.is_alphanumeric());
    count
        || tag_link(line)
        || FURNITURE_LINES.iter().any(|l| bare.eq_ignore_ascii_case(l))
        || FURNITURE_LABELS.iter().any(|l| bare.get(..l.len()).is_some_and(|s| s.eq_ignore_ascii_case(l)))
            && line.split_whitespace().nth(FURNITURE_LABEL_WORDS_MAX).is_none()
}

/// Whether a kept block of a thread is its software's furniture rather than what a poster wrote: each of its
/// lines is (see `furniture_line`; MyBB prints a poster's statistics as one block of lines). Only short blocks
/// are looked at; code is never furniture.
pub fn thread_furniture(b: &Block) -> bool {
    !matches!(b.kind, Kind::Pre)
        && b.text_len <= FURNITURE_CHARS_MAX
        && b.md.lines().any(|l| !l.trim().is_empty())
        && b.md.lines().filter(|l| !l.trim().is_empty()).all(furniture_line)
}

/// Drops the kept blocks that are a thread's furniture (see `thread_furniture`). Linear in the kept blocks.
pub fn leave_furniture_out(page: &Page, keep: &mut Vec<usize>) {
    keep.retain(|&i| !page.blocks.get(i).is_some_and(thread_furniture));
}

#[cfg(test)]
mod tests {
    use crate::{Extractor, Options};

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
             </li></ul></div></div><div id=\"answers\">{}{}{}</div><p>Know someone who can answer? Share a link to \
             this question by email, or on a social network, and help the asker, today.</p></div></body></html>",
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

    #[test]
    fn a_thread_ends_at_its_last_post() {
        let md = Extractor::run(qa_page("QAPage").as_bytes(), Options::default()).markdown();
        assert!(md.contains("cringle down to the boom"), "{md}");
        assert!(!md.contains("Know someone who can answer"), "{md}");
    }

    /// A thread as forum software prints it, no schema.org types: each post's text in an element marked by
    /// `marker` (a class or id token, or a `data-role`), then a paragraph about other threads after the last post.
    fn software_thread(marker: impl Fn(usize) -> String) -> String {
        let texts = [
            "My tiller creaks when I push it hard over, is that normal or should I worry about the fitting?",
            "A creak usually means the pintles are dry: a drop of grease on each and it should go quiet, as ours did.",
            "Check the bolts through the rudder stock too, a loose one creaks first and breaks later, so tighten it.",
        ];
        let posts: String = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                format!(
                    "<div class=\"post\"><p class=\"author\">sailor{i}</p><div {}><p>{t}</p></div></div>",
                    marker(i)
                )
            })
            .collect();
        format!(
            "<html><head><title>Creaking tiller</title></head><body><div id=\"page-body\"><h2>Creaking tiller</h2>\
             {posts}<div class=\"panel\"><p>Other people read about dinghy trailers, launching trolleys and the \
             best way to store a boat for winter, with long threads on each of them this season.</p></div></div>\
             </body></html>"
        )
    }

    #[test]
    fn posts_marked_by_forum_software_make_a_thread() {
        let markers: [&dyn Fn(usize) -> String; 4] = [
            &|_| "class=\"postbody\"".into(),
            &|_| "class=\"message-body bbWrapper\"".into(),
            &|i| format!("id=\"post_message_{}\"", 1000 + i),
            &|_| "data-role=\"commentContent\"".into(),
        ];
        for marker in markers {
            let md = Extractor::run(software_thread(marker).as_bytes(), Options::default()).markdown();
            assert!(md.contains("is that normal") && md.contains("tighten it"), "{md}");
            // A thread ends at its last post.
            assert!(!md.contains("dinghy trailers"), "{md}");
        }
        // Not a marker: a class that only holds the word.
        let md = Extractor::run(software_thread(|_| "class=\"postbody-wide\"".into()).as_bytes(), Options::default())
            .markdown();
        assert!(md.contains("dinghy trailers"), "{md}");
    }

    /// A story (a link and a line about it) with its readers' comments under it, in a comments list of nesting
    /// level 1 (`comments1`); `head` goes in the page's head.
    fn discussion(head: &str, comments: usize) -> String {
        let comment = |i: usize| {
            format!(
                "<li class=\"comments_subtree\"><div class=\"comment\"><a href=\"/~sailor{i}\">sailor{i}</a>\
                 <div class=\"comment_text\"><p>Reply number {i}: I reefed early and it paid off, the boat stood up, \
                 the helm went light, and we made the harbour before the squall, dry and calm.</p></div></div></li>"
            )
        };
        let list: String = (0..comments).map(comment).collect();
        format!(
            "<html><head><title>Reefing early</title><meta property=\"og:type\" content=\"article\">{head}</head>\
             <body><div id=\"inside\"><div class=\"story\"><a href=\"https://example.com/reef\">Reefing early, a \
             guide</a><p>Via a sailing blog, about when to reef, shared for discussion here.</p></div>\
             <ol class=\"comments comments1\">{list}</ol></div></body></html>"
        )
    }

    #[test]
    fn a_discussion_keeps_its_comments() {
        let md = Extractor::run(discussion("", 6).as_bytes(), Options::default()).markdown();
        assert!(md.contains("Reply number 0") && md.contains("Reply number 5"), "{md}");
        // Too few comments, or an article dated as one, whose readers' comments are remarks on it.
        let md = Extractor::run(discussion("", 4).as_bytes(), Options::default()).markdown();
        assert!(!md.contains("Reply number"), "{md}");
        let dated = "<meta property=\"article:published_time\" content=\"2024-05-01T10:00:00Z\">";
        let md = Extractor::run(discussion(dated, 6).as_bytes(), Options::default()).markdown();
        assert!(!md.contains("Reply number"), "{md}");
    }

    #[test]
    fn a_posters_card_stays_out_not_the_name_in_it() {
        for card in ["postprofile", "message-userDetails", "cAuthorPane_info", "MessageCard__user-details"] {
            let html = software_thread(|i| {
                format!(
                    "class=\"postbody\"><div class=\"{card}\"><p>Seasoned crew member, joined March 2019, \
                     posts 4,210</p></div><p class=\"MessageCard__user-info__name\">poster number {i}</p"
                )
            });
            let md = Extractor::run(html.as_bytes(), Options::default()).markdown();
            assert!(md.contains("is that normal") && md.contains("poster number 2"), "{md}");
            assert!(!md.contains("Seasoned crew member"), "{card}: {md}");
        }
    }

    #[test]
    fn a_posters_signature_and_statistics_stay_out() {
        let post = |who: &str, text: &str| {
            format!(
                "<article class=\"message\"><div class=\"message-user\"><p class=\"username\">{who}</p><div class=\"message-userTitle\">\
                 Well-known member</div><dl class=\"message-userExtras\"><dt>Joined</dt><dd>Feb 8, 2023</dd><dt>Messages\
                 </dt><dd>1,204</dd></dl></div><div class=\"message-content\"><p>{text}, and more to say about it, with \
                 a comma or two, and a reason.</p><div class=\"message-signature\"><p>My boats: a Wayfarer, a Mirror \
                 and a leaky Optimist, all for sale, ask me.</p></div></div></article>"
            )
        };
        let html = format!(
            "<html><head><title>Which rope for a main sheet?</title><meta property=\"og:type\" content=\"forum\"></head>\
             <body><main><h1>Which rope for a main sheet?</h1>{}{}{}</main></body></html>",
            post("ann", "I need a new main sheet for my dinghy and wonder which rope to buy"),
            post("bob", "A braided polyester line of eight millimetres runs well through the blocks"),
            post("cat", "Dyneema is lighter but slips in the cleats unless it has a cover"),
        );
        let md = Extractor::run(html.as_bytes(), Options::default()).markdown();
        assert!(md.contains("which rope to buy") && md.contains("Dyneema is lighter"), "{md}");
        assert!(md.contains("bob"), "{md}");
        assert!(!md.contains("My boats") && !md.contains("Joined") && !md.contains("Well-known"), "{md}");
    }

    #[test]
    fn a_threads_counts_and_edit_notes_stay_out() {
        let post = |who: &str, text: &str, extra: &str| {
            format!(
                "<article class=\"message\"><p class=\"username\">{who}</p><div class=\"bbWrapper\"><p>{text}, \
                 and more to say about it, with a comma or two, and a reason.</p></div><div class=\"message-lastEdit\">\
                 Last edited: Jul 9, 2022</div><div class=\"likes\">{extra}</div><div class=\"author_statistics\">\
                 Posts: 116<br>Threads: 23<br>Joined: Feb 2019<br>Reputation: <a href=\"/rep\"><strong>7</strong></a>\
                 </div><p class=\"status\">Offline</p></article>"
            )
        };
        let html = format!(
            "<html><head><title>Which rope for a main sheet?</title></head><body><main><h1>Which rope for a main \
             sheet?</h1><ul class=\"post-taglist\"><li><a href=\"https://example.com/questions/tagged/sailing-ropes\">sailing-ropes</a>\
             </li></ul><div class=\"stats\">14 participants</div>{}{}{}</main></body></html>",
            post("ann", "I need a new main sheet for my dinghy and wonder which rope to buy", "7 Likes"),
            post("bob", "A braided polyester line of eight millimetres runs well through the blocks", "Reactions: ann"),
            post("cat", "Dyneema is lighter but slips in the cleats unless it has a cover", "12"),
        );
        let md = Extractor::run(html.as_bytes(), Options::default()).markdown();
        assert!(md.contains("which rope to buy") && md.contains("Dyneema is lighter"), "{md}");
        for furniture in [
            "Last edited",
            "7 Likes",
            "Reactions",
            "participants",
            "\n\n12",
            "Posts: 116",
            "Reputation",
            "Offline",
            "sailing-ropes",
        ] {
            assert!(!md.contains(furniture), "{furniture}: {md}");
        }
        // Not furniture: a post that says more than a count, or a count that is not one of a forum's.
        let html = html
            .replace("7 Likes", "7 likes is what my last post got, oddly")
            .replace("\"stats\">14 participants", "\"stats\">14 knots");
        let md = Extractor::run(html.as_bytes(), Options::default()).markdown();
        assert!(md.contains("7 likes is what") && md.contains("14 knots"), "{md}");
    }
}
