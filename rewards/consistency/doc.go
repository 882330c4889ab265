// Package consistency scores the structural and stylistic consistency of
// a Markdown document with a deterministic score in [0, 1].
//
// It is the quality measure of the collaborative writing task: several
// authors write the sections of one document, each with their own habits,
// and the score says how much the result reads as if one author had
// written it. [Check] runs thirteen checks; each is reported on its own
// ([Report.Checks], in the order listed below) with a Pass value in [0, 1]
// and the number N of things it judged, and
//
//	Score = Coverage × mean(Pass over the checks with N > 0)
//
// where Coverage is the fraction of the template's sections that are
// present and non-empty, so a short or empty document cannot score high on
// style alone (an empty document scores 0). A check with nothing to judge
// (no bullets, no code, no US/UK word …) passes but carries no weight, so
// the inconsistencies a document does show are not diluted by the habits
// it never exercises.
//
// # What is text
//
// Code is never text: fenced code blocks (``` and ~~~), indented code
// blocks and inline code spans are excluded from every text check (an
// inline code span reads as the one-letter word "x", so sentences around
// it keep their shape). URLs, HTML tags, link destinations and link
// reference definitions (such as the RFC anchors "[summary]: #summary")
// are dropped too; link text stays. YAML front matter is skipped. Words
// glued to identifiers (my_crate, foo::Bar, a.color, x2) are not prose.
// Block quotes quote somebody else, so they are excluded from the
// spelling, person and readability checks, and so is text inside double
// quotes ("…" or “…”) for the spelling and person checks.
//
// # The checks
//
// Structure:
//
//   - title (markdownlint MD025 single-title and MD041 first-line-heading):
//     exactly one H1, and it is the first heading: 1; one H1 that is not
//     first: 0.5; none: 0; n > 1: 1/n. With [Template].Title false, no H1
//     also passes (MD025 alone).
//   - sections (MD024 no-duplicate-heading, for the required sections):
//     every template section exactly once and in template order. Headings
//     match section names ignoring case, hyphens, punctuation and a plural
//     "s" at any level. Pass = L / max(n, m), where n is the number of
//     template sections, m the number of headings that name one, and L
//     the longest run of them in template order (a longest increasing
//     subsequence): a missing section costs 1/n, a duplicate about 1/n,
//     two swapped sections 1/n.
//   - nonempty_sections: the fraction of the present template sections
//     that have at least one line of content (prose, list, table, quote or
//     code) below their heading or in their subsections.
//   - heading_levels (MD001 heading-increment): heading levels go down by
//     at most one at a time. Pass = 1 − skips / (headings − 1).
//
// One style per document. Each of these counts the occurrences of every
// variant and scores Pass = max(0, 2p − 1), where p is the majority
// variant's share of the occurrences: one style scores 1, one stray among
// 40 costs 0.05, a 3:1 mix scores 0.5 and an even split of two styles 0.
// A document with no occurrences passes (and has N = 0). The variants are
// named as [CheckResult].Majority reports them:
//
//   - heading_style (MD003 heading-style): "atx" (## x), "atx_closed"
//     (## x ##) or "setext" (underlined with === or ---). Judged on H1 and
//     H2 only, because a setext document must write deeper headings in ATX
//     (markdownlint's "setext_with_atx").
//   - heading_case: "sentence" (Rationale and alternatives) or "title"
//     (Rationale and Alternatives), judged on headings of two or more
//     words: only words after the first that are not minor words (a, and,
//     of, with …), proper nouns (Rust, Cargo …), acronyms or identifiers
//     are evidence, and the majority of them decides.
//   - bullet_style (MD004 ul-style, "consistent"): the unordered list
//     marker, "-", "*" or "+", at every nesting level.
//   - emphasis_style (MD049 emphasis-style): "*" (*x*) or "_" (_x_), found
//     with CommonMark's flanking rules, so snake_case words are not
//     emphasis.
//   - strong_style (MD050 strong-style): "**" (**x**) or "__" (__x__).
//   - code_style (MD046 code-block-style and MD048 code-fence-style): each
//     code block is "backtick" (``` fence), "tilde" (~~~ fence) or
//     "indented"; one of the three for the whole document.
//   - spelling: "us" or "uk", counted on the words of unambiguous US/UK
//     pairs (color/colour, behavior/behaviour, organize/organise,
//     analyze/analyse, center/centre, …; words that are also common other
//     words or that technical UK English writes the US way, such as
//     license and program, are left out).
//   - person: the authors' grammatical person, "we" (we, us, our, ours,
//     ourselves) or "I" (I, me, my, mine, myself).
//
// Why not the plain majority share p: on the shipped RFCs restyled by four
// authors with pairwise different habits, p gives a mean Score of 0.834
// and up to 0.913, too close to a single author's 0.995 to tell them
// apart; 2p − 1 (the share of occurrences that agree with the majority
// beyond those that disagree) gives mean 0.674 and at most 0.833. The
// price is paid by real, unedited RFCs, whose median drops from 0.970 to
// 0.939.
//
// Readability:
//
//   - readability: the Flesch–Kincaid grade level
//     0.39·words/sentences + 11.8·syllables/words − 15.59 of every template
//     section (with its subsections) of at least MinSectionWords words
//     (default 30); headings and tables are not counted, each list item is
//     a sentence. Pass = 1 when the spread max − min is at most
//     ReadabilityBound (default 12 grades), falling linearly to 0 at twice
//     the bound. Over the 92 full-template Rust RFCs of the project's data
//     the spread has median 5.7, 90th percentile 10.4 and maximum 17.6
//     grades, so the default bound passes all but a few real documents in
//     full while a section written for a much younger or older reader
//     still costs.
//
// # Style vocabulary
//
// The variants above, the spelling pairs and the pronouns are the
// definitions the checks count by. They, and the reading of Markdown
// itself (blocks, emphasis, words), live in internal/markdown, which the
// writing env's simulated writers read Markdown with too, so that a
// document they render in one style passes every "one style" check. This
// package only judges documents; rendering text in a style is the writing
// env's business (envs/writing/internal/restyle).
//
// # Measured
//
// On the 40 Rust RFCs shipped in envs/writing/corpus, as written (with
// [Template].Title false, since RFC files keep their title outside the
// text), Score has min 0.766, median 0.939, mean 0.929; on the 15 held-out
// RFCs min 0.838, median 0.956. Real RFCs are not perfectly consistent:
// their authors mix bullet markers, heading case and "I" with "we". The
// same 40 RFCs given a title and rendered section by section by the
// writing env's simulated writers (see TestAuthorsOnRealText in
// envs/writing): one author with random habits: mean 0.995, and every
// "one style" check 1; four authors in one house style: mean 0.994; four
// authors with pairwise different habits: min 0.495, median 0.681,
// max 0.833; four authors with random habits: mean 0.74.
//
// Check is fast (a 30 KB document takes a fraction of a millisecond; see
// BenchmarkCheck), allocates little, never fails and never panics: any
// byte string is some Markdown document.
package consistency
