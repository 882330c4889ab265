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
// # Why a shared package
//
// Two sides of the project read the same Markdown and must read it alike,
// and neither may import the other:
//
//   - the checker, rewards/consistency, behind the "writing.consistency"
//     reward: it judges a finished document;
//   - the writing env's simulated writers (envs/writing/internal/restyle):
//     they render real RFC text in a writer's habits, and the env asks
//     whether a unit departs from the house style by rendering it in that
//     style again (its RFC loader also finds code fences and template
//     section names with FenceOpen and NormalizeHeading).
//
// An env never imports a reward's internals, so what both need cannot
// live in rewards/consistency, and a reward knows nothing of an env. Nor
// is it written twice: text a simulated writer renders in one set of
// habits must pass every "one style" check, so what is a heading, a code
// block, a list item, emphasis, a word, a US or UK spelling and a pronoun
// must be decided by the very same rules on both sides; two copies would
// drift apart, and copied blocks are what the project's duplicate check
// forbids.
//
// Only what both sides use is here. The scoring (the checks, section
// matching, readability, heading-case classification) stays in
// rewards/consistency; the rewriting (restyling, recasing, respelling,
// pronoun swaps) stays with the writers. Parse also does the bookkeeping
// only the checker reads (prose units, section attribution, content line
// counts), because it is interleaved with the line classification the
// writers use. Should the writers and the checker ever share no code, this
// package is the seam: one side then needs a reading of its own, and the
// writers' text may no longer pass the checks exactly.
//
// Everything here is deterministic, allocates little, never fails and
// never panics: any byte string is some Markdown.
package markdown
