package markdown

// The style variants: the options of each writing habit, named as the
// consistency checker reports them (with markdownlint's rule numbers).

// HeadingStyle is a heading syntax (markdownlint MD003).
type HeadingStyle string

// Heading syntaxes. Setext headings exist only for levels 1 and 2, so a
// setext document writes its deeper headings in ATX.
const (
	HeadingATX       HeadingStyle = "atx"        // "## Title"
	HeadingATXClosed HeadingStyle = "atx_closed" // "## Title ##"
	HeadingSetext    HeadingStyle = "setext"     // "Title" underlined with === or ---
)

// HeadingCase is a heading capitalization convention.
type HeadingCase string

// Heading capitalization conventions (see CaseEvidence).
const (
	CaseSentence HeadingCase = "sentence" // "Rationale and alternatives"
	CaseTitle    HeadingCase = "title"    // "Rationale and Alternatives"
)

// BulletMarker is the character that starts an unordered list item
// (markdownlint MD004).
type BulletMarker byte

// Bullet markers.
const (
	BulletDash BulletMarker = '-'
	BulletStar BulletMarker = '*'
	BulletPlus BulletMarker = '+'
)

// String returns the marker character.
func (b BulletMarker) String() string { return string(rune(b)) }

// EmphasisMarker is the delimiter of emphasis (MD049) or strong emphasis
// (MD050).
type EmphasisMarker string

// Emphasis and strong delimiters.
const (
	EmphasisStar       EmphasisMarker = "*"  // *text*
	EmphasisUnderscore EmphasisMarker = "_"  // _text_
	StrongStar         EmphasisMarker = "**" // **text**
	StrongUnderscore   EmphasisMarker = "__" // __text__
)

// CodeStyle is the way a code block is written (MD046 and MD048).
type CodeStyle string

// Code block styles.
const (
	CodeBacktick CodeStyle = "backtick" // ``` fence
	CodeTilde    CodeStyle = "tilde"    // ~~~ fence
	CodeIndented CodeStyle = "indented" // four-space indentation
)

// Spelling is an English spelling variant.
type Spelling string

// Spelling variants; see SpellingOfWord.
const (
	SpellingUS Spelling = "us"
	SpellingUK Spelling = "uk"
)

// Person is the grammatical person the authors use for themselves.
type Person string

// Authorial persons; see PersonOf.
const (
	PersonPlural   Person = "we" // we, us, our, ours, ourselves
	PersonSingular Person = "I"  // I, me, my, mine, myself
)
