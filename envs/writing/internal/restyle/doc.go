// Package restyle is the pen of the writing env's simulated writers: it
// renders Markdown in a writer's habits ([Style]): heading syntax and
// capitalization, bullet marker, emphasis and strong delimiters, code
// block style, US or UK spelling and the authors' grammatical person.
//
// The env renders the real RFC text of a unit in a writer's habits to
// simulate an LLM writing it ([Markdown]), and asks whether a unit departs
// from the house style by rendering it in that style and comparing. It
// reads Markdown with the env's own envs/writing/internal/markdown, which
// shares nothing with the checker behind the "writing.consistency"
// reward: text rendered in one Style is one variant of every habit by
// this package's reading, and the checker judges it by its own. Nothing
// here scores a document.
package restyle
