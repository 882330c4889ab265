// Package markdown reads Markdown the way troupe's collaborative-writing
// task needs it read: a line-based approximation of CommonMark's block
// structure ([Parse]), inline Markdown reduced to plain text with its
// emphasis found by CommonMark's flanking rules ([Stripper], [Mask]), the
// words of prose and whether a word is part of an identifier ([EachWord],
// [IdentifierLike]), and the small English vocabulary of writing habits:
// the style variants ([HeadingStyle] … [Person]), US and UK spellings
// ([SpellingOfWord]), first-person pronouns ([PersonOf]) and the
// capitalization evidence of heading words ([CaseEvidence]).
//
// # Whose package
//
// It belongs to the writing env's generator: the simulated writers
// (envs/writing/internal/restyle) render real RFC text in a writer's
// habits with it, and the env asks whether a unit departs from the house
// style by rendering it in that style again (its RFC loader also finds
// code fences and template section names with FenceOpen and
// NormalizeHeading). The checker behind the "writing.consistency" reward
// (rewards/consistency) has a reading of Markdown of its own and shares no
// code or definition with this package, so what the writers produce is
// judged by rules they were not written against. Parse still does some
// bookkeeping (prose units, section attribution, content line counts)
// that the env does not read; it is interleaved with the line
// classification the writers use.
//
// Everything here is deterministic, allocates little, never fails and
// never panics: any byte string is some Markdown.
package markdown
