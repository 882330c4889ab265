package consistency

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// False positives found by running the checker on the real held-out RFCs
// (envs/writing/corpus/HELDOUT.txt) as their authors wrote them. Each case
// quotes the real text (rust-lang/rfcs, MIT OR Apache-2.0) that was flagged
// although it is consistent, and a control: the same text with the
// inconsistency the check exists for, which must still be flagged.

type realCase struct {
	name, rfc, check string
	real, control    string
}

var realCases = []realCase{
	{
		// "CPUs" was not folded to "CPU" (foldPlural reads "cpus" like
		// "status") and so was a second capitalization and spelling.
		name: "acronym plural", rfc: "2867-isa-attribute.md", check: checkTerminology,
		real: "Starting with `ARMv4T`, many ARM CPUs support two separate instruction sets. " +
			"Unlike with the `x86_64` architecture, where the CPU can run both `x86` and `x86_64` code, " +
			"a particular form of branch instruction allows for the CPU to change between the two modes.\n\n" +
			"Currently this is only of use on ARM family CPUs, which support both the `arm::a32` and `arm::t32` instruction sets. " +
			"The CPU has a bit within the Program Status Register, and attempting to read one form of code while the " +
			"CPU's flag is set for the other form of code is Undefined Behavior.\n",
		control: "Starting with `ARMv4T`, many ARM CPUs support two separate instruction sets. " +
			"Unlike with the `x86_64` architecture, where the Cpu can run both `x86` and `x86_64` code, " +
			"a particular form of branch instruction allows for the Cpu to change between the two modes.\n\n" +
			"Currently this is only of use on ARM family CPUs. The CPU has a bit within the Program Status Register.\n",
	},
	{
		// A scope named in bold was taken for the hyphenated spelling of
		// the verb phrase "publish new packages".
		name: "emphasized label", rfc: "2947-crates-io-token-scopes.md", check: checkTerminology,
		real: "The user will be able to choose one or more endpoint scopes. This RFC proposes\n" +
			"adding the following endpoint scopes:\n\n" +
			"* **publish-new**: allows publishing new crates\n" +
			"* **publish-update**: allows publishing a new version for existing crates the\n  user owns\n\n" +
			"| Endpoint | Required scope |\n|---|---|\n| `PUT /crates/new` (new crates) | **publish-new** |\n\n" +
			"* [nuget] (package registry for the .NET ecosystem) implements three endpoint\n" +
			"  scopes (publish new packages, publish new versions, unlist packages), has a\n  mandatory expiration.\n",
		control: "The user will be able to publish-new with one scope. A token that can publish-new\n" +
			"is enough for a first release.\n\n" +
			"Other registries let a token publish new packages, and some publish new versions too.\n",
	},
	{
		// A link labelled with the crate it points to, in a reference
		// list, was a plain (unbackticked) use of the identifier.
		name: "link labelled with its target", rfc: "2788-standard-lazy-types.md", check: checkTerminology,
		real: "Although some of the popularity of `lazy_static` can be attributed to current limitations of constant evaluation in Rust, " +
			"there are many cases when even perfect `const fn` can't replace lazy values.\n\n" +
			"`lazy_static` is implemented using macros, to work-around former language limitations.\n\n" +
			"* [lazy_static](https://crates.io/crates/lazy_static)\n* [lazycell](https://crates.io/crates/lazycell)\n",
		control: "Although some of the popularity of `lazy_static` can be attributed to current limitations of constant evaluation in Rust, " +
			"there are many cases when even perfect `const fn` can't replace lazy values.\n\n" +
			"lazy_static is implemented using macros, to work-around former language limitations.\n",
	},
	{
		// "sometimes" was folded like a plural to "sometime", a spelling
		// of "some-time".
		name: "adverb in -s", rfc: "3681-default-field-values.md", check: checkTerminology,
		real: "- Disallow both `#[non_exhaustive]` and building struct literals with private\n" +
			"  fields in order to resolve the interaction some-time in the future, as\n" +
			"  *enabling* either ability is a backwards compatible change.\n\n" +
			"Yet another common requested feature is the introduction of struct literal type\n" +
			"inference. This has sometimes been proposed as an alternative or\n" +
			"complementary to structural records.\n",
		control: "- Disallow both `#[non_exhaustive]` and building struct literals with private\n" +
			"  fields in order to resolve the interaction some-time in the future.\n\n" +
			"We expect to resolve it sometime next year.\n",
	},
	{
		// A sentence listing thirteen types in code spans read as a
		// paragraph of 25 words with 12 % function words.
		name: "code spans are not words", rfc: "2591-exhaustive-integer-pattern-matching.md", check: checkFluency,
		real: "Extend Rust's pattern matching exhaustiveness checks to cover the integer types: `u8`, `u16`, `u32`, `u64`, " +
			"`u128`, `usize`, `i8`, `i16`, `i32`, `i64`, `i128`, `isize` and `char`.\n",
		control: "Extend pattern matching exhaustiveness checks cover integer types `u8`, `u16`, `u32`, `u64` " +
			"widths signedness ranges literals constants guards arms bindings patterns wildcards slices tuples structs " +
			"enums references boxes arrays strings characters floats.\n",
	},
	{
		// Inline code in a heading was read as the lower-case word "x":
		// "Added to `[resolver]`" counted as a sentence-case heading
		// among the Title Case ones, although it has no word whose case
		// could tell (headings as written, in the order of the RFC).
		name: "code in headings", rfc: "3923-cargo-min-publish-age.md", check: checkHeadingCase,
		real: "### Added to [`[resolver]`](https://doc.rust-lang.org/cargo/reference/config.html#resolver)\n\n" +
			"### Added to [`[registries]`](https://doc.rust-lang.org/cargo/reference/config.html#registries)\n\n" +
			"### Configuration Locations\n\n### Configuration Names\n\n### Related Options in Cargo\n",
		control: "### Added to [`[resolver]`](https://doc.rust-lang.org/cargo/reference/config.html#resolver)\n\n" +
			"### Configuration Locations\n\n### Configuration Names\n\n### Related Options in Cargo\n\n" +
			"### Slower problem discovery\n",
	},
	{
		// A hyphenated compound at the end of a source line ("single-file"
		// before the line break, "packages" after it) was not read as
		// attributive, because a soft line break was not a space: it
		// counted as a spelling of the noun phrase "a single file".
		// The control writes the noun hyphenated twice, as RFC 3502 once
		// does ("being in a single-file.").
		name: "compound before a line break", rfc: "3424-cargo-script.md", check: checkTerminology,
		real: "This *experimental RFC* adds unstable support for single-file\npackages in cargo so we can explore the design and resolve\n\n" +
			"Therefore, this eRFC is limited in scope to running single-file\nrust packages.\n\n" +
			"While other third-party cargo commands might not immediately adopt single-file\n" +
			"packages, first-party support for them will help encourage their adoption.\n\n" +
			"When a single file is not enough, you can separately define a `Cargo.toml` file along with the `src/main.rs` file.\n\n" +
			"How do we handle the lockfile, balancing single-file\npackage use case needs (single file, easy copy / paste, etc) with\n",
		control: "This *experimental RFC* adds unstable support for single-file\npackages in cargo so we can explore the design and resolve\n\n" +
			"When a single file is not enough, you can separately define a `Cargo.toml` file along with the `src/main.rs` file.\n\n" +
			"How do we handle the lockfile, balancing single-file\npackage use case needs (single file, easy copy / paste, etc) with\n\n" +
			"transition when their program has outgrown being in a single-file.\n\n" +
			"- Not single-file; just gives fast caching for a cargo package\n",
	},
	{
		// A capitalized "-ies" plural kept its ending while the singular
		// and the lower-case plural were folded, so "Repositories" (a
		// working group's name, a post's title) and "Repository" (a
		// paper's title) were two capitalizations of "repository".
		name: "plural in -ies", rfc: "3691-trusted-publishing-cratesio.md", check: checkTerminology,
		real: "Implementation of this would follow in [PyPI's footsteps](https://blog.pypi.org/posts/2023-04-20-introducing-trusted-publishers/) " +
			"and align with [OpenSSF's Principles for Package Repository Security](https://repos.openssf.org/principles-for-package-repository-security#authorization).\n\n" +
			"- Claims can be associated to a specific GitHub organization, repository, workflow, and environment.\n\n" +
			"The OpenSSF Security Software Repositories Working Group [provides more detailed justification](https://repos.openssf.org/trusted-publishers-for-all-package-repositories#oidc-id-tokens-and-repository-controlled-tokens) " +
			"to use the token exchange model were a valid ID token is exchanged for a package repository specific access token.\n\n" +
			"Other package repositories have implemented similar support:\n" +
			"- [OSSF's Trusted Publishers For All Package Repositories Blog Post](https://repos.openssf.org/trusted-publishers-for-all-package-repositories)\n",
		control: "Implementation of this would follow in [PyPI's footsteps](https://blog.pypi.org/posts/2023-04-20-introducing-trusted-publishers/) " +
			"and align with [OpenSSF's Principles for Package Repository Security](https://repos.openssf.org/principles-for-package-repository-security#authorization).\n\n" +
			"The OpenSSF Security Software REPOSITORIES Working Group provides more detailed justification.\n\n" +
			"Other package repositories have implemented similar support.\n",
	},
	{
		// A link labelled with the anchor it points to was a hyphenated
		// spelling of the term: "noted in [future-possibilities][]" (to
		// #future-possibilities) against "a future possibility". The
		// control drops the links, leaving the hyphenated noun in prose.
		name: "link labelled with its anchor", rfc: "3137-let-else.md", check: checkTerminology,
		real: "Boolean matches are not useful with let-else and so lazy boolean expressions are disallowed for reasons noted in [future-possibilities][].\n\n" +
			"This is for a possible extension for let-else similar to the (yet unimplemented) if-else-chains feature, as mentioned in [future-possibilities][] with more detail.\n\n" +
			"However, as mentioned in the [future-possibilities][] section, this is likely not necessary.\n\n" +
			"## Future possibilities\n[future-possibilities]: #future-possibilities\n\n" +
			"While this RFC does not introduce or propose the same thing for let-else it attempts to allow it to be a future possibility for\npotential future consistency with if-let-chains.\n\n" +
			"This RFC does not suggest that we do any of these, but notes that they would be future possibilities.\n\n",
		control: "Boolean matches are not useful with let-else and so lazy boolean expressions are disallowed for reasons noted in future-possibilities.\n\n" +
			"This is for a possible extension for let-else similar to the (yet unimplemented) if-else-chains feature, as mentioned in future-possibilities with more detail.\n\n" +
			"However, as mentioned in the [future-possibilities][] section, this is likely not necessary.\n\n" +
			"## Future possibilities\n[future-possibilities]: #future-possibilities\n\n" +
			"While this RFC does not introduce or propose the same thing for let-else it attempts to allow it to be a future possibility for\npotential future consistency with if-let-chains.\n\n" +
			"This RFC does not suggest that we do any of these, but notes that they would be future possibilities.\n\n",
	},
	{
		// A capital "A" naming a compilation unit was the article "a",
		// and "A and", "A with" two articles followed by words that
		// cannot follow one: the paragraph read as shuffled words. The
		// control writes the article in lower case before those words.
		name: "capital A as a name", rfc: "3716-target-modifiers.md", check: checkFluency,
		real:    "It is unsound to link together CUs A and C, but linking A with B or B with C is\nsound.\n",
		control: "It is unsound to link together CUs a and C, but linking a with B or B with C is\nsound.\n",
	},
	{
		// Numbers were content words, so a sentence counting items read
		// as a list of names (15 % function words). A number is a
		// quantifier, as "many" and "few" are. The control is the same
		// sentence as a list of names without the numbers.
		name: "numbers are quantifiers", rfc: "3114-prelude-2021.md", check: checkFluency,
		real: "`std::prelude::v1` currently contains 5 types, 26 traits, 4 variants, 22 macros and 1 free function " +
			"(not including primitive types like bool, char, integers, floating points and slices).\n",
		control: "`std::prelude::v1` currently contains types, traits, variants, macros and free function " +
			"(not including primitive types like bool, char, integers, floating points and slices), TryFrom, TryInto, FromIterator.\n",
	},
	{
		// A reference list's entry that is only a link cites the title of
		// the page it points to: the forum thread "Propose additions to
		// std::prelude" is no plain use of the identifier the RFC writes
		// as `std::prelude`. The control writes it plain in the RFC's
		// own prose.
		name: "cited titles", rfc: "3114-prelude-2021.md", check: checkTerminology,
		real: "The compiler currently brings all items from `std::prelude::v1` into scope for each module (for code using `std`). Crates that declare usage of the 2021 edition will instead get items from `std::prelude::rust_2021` imported into scope. With the implementation of this RFC, we will add `rust_2015` and `rust_2018` modules in `std::prelude`, and a crate configuring a particular edition will get the prelude appropriate for its edition.\n\n" +
			"The documentation for `FromIterator`'s `from_iter()` method currently reads:\n\n" +
			"## Previous discussions\n\n* [IRLO: Propose additions to std::prelude](https://internals.rust-lang.org/t/propose-additions-to-std-prelude/7189)\n* [IRLO: Pre-RFC: Add FromIterator to the prelude](https://internals.rust-lang.org/t/pre-rfc-add-fromiterator-to-the-prelude/4324)\n\n",
		control: "The compiler currently brings all items from `std::prelude::v1` into scope for each module (for code using `std`). Crates that declare usage of the 2021 edition will instead get items from `std::prelude::rust_2021` imported into scope. With the implementation of this RFC, we will add `rust_2015` and `rust_2018` modules in std::prelude, and a crate configuring a particular edition will get the prelude appropriate for its edition.\n\n" +
			"The documentation for `FromIterator`'s `from_iter()` method currently reads:\n\n" +
			"## Previous discussions\n\n* [IRLO: Propose additions to std::prelude](https://internals.rust-lang.org/t/propose-additions-to-std-prelude/7189)\n* [IRLO: Pre-RFC: Add FromIterator to the prelude](https://internals.rust-lang.org/t/pre-rfc-add-fromiterator-to-the-prelude/4324)\n\n" +
			"A crate may also use FromIterator explicitly.\n\n",
	},
}

func TestRealTextFalsePositives(t *testing.T) {
	for _, c := range realCases {
		t.Run(c.name, func(t *testing.T) {
			r := Options{Template: rfcTemplate}.Check([]byte(c.real))
			if p, _ := r.Pass(c.check); p != 1 {
				t.Errorf("%s (real text of %s) = %.3f, want 1:\n%s", c.check, c.rfc, p, r)
			}
			ctl := Options{Template: rfcTemplate}.Check([]byte(c.control))
			if p, _ := ctl.Pass(c.check); p >= 1 {
				t.Errorf("%s of the control = %.3f, want it flagged:\n%s", c.check, p, ctl)
			}
		})
	}
}

// TestHeldOutOriginalsTerminology scores the held-out RFCs as written:
// after the fixes above, what terminology still flags in them are the
// authors' own variants (runtime / run-time, command line / command-line
// as a noun, source replacement / source-replacement, footgun / foot-gun,
// lock file / lockfile), and fluency passes every one.
func TestHeldOutOriginalsTerminology(t *testing.T) {
	list, err := os.ReadFile(filepath.Join(shippedDir, "HELDOUT.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sum, n := 0.0, 0
	for _, name := range strings.Fields(string(list)) {
		b, err := os.ReadFile(filepath.Join(sharedDir, name))
		if os.IsNotExist(err) {
			t.Skipf("held-out data not here: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		r := Options{Template: rfcTemplate}.Check(b)
		p, _ := r.Pass(checkTerminology)
		sum += p
		n++
		if p < 1 {
			t.Logf("%s terminology %.3f: %s", name, p, r.Checks[indexOf(r, checkTerminology)].Detail)
		}
		if f, _ := r.Pass(checkFluency); f != 1 {
			t.Errorf("%s: fluency %.3f on the RFC as written", name, f)
		}
	}
	mean := sum / float64(n)
	t.Logf("terminology of the %d held-out originals: mean %.3f (0.750 before the fixes)", n, mean)
	if mean < 0.85 {
		t.Errorf("terminology of the held-out originals: mean %.3f, want ≥ 0.85", mean)
	}
}

func indexOf(r Report, name string) int {
	for i, c := range r.Checks {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// TestReplacedTermsOnRealText: the shipped RFCs as written replace no
// term by another part-way through, yet the replacement test reported
// words that are not one term: "modifier" / "statement" and "register"
// / "macro" (RFC 2873), "block" / "construct" (3137), "type" /
// "feature" (3192), "pick" / "prefer" (3537). Each pair's only shared
// content neighbour besides one word was the placeholder of inline code
// ("the `asm` statement", "the `h` modifier"). "parameter" / "written"
// (3654) shared two, but "written" is used on both sides throughout
// (4 before, 3 after). The controls rename a term in the second half of
// the same RFCs, as a writer who drifts does, and must be caught.
func TestReplacedTermsOnRealText(t *testing.T) {
	replaced := func(doc string) ([]string, float64) {
		tr := trace{}
		r := Options{Template: rfcTemplate}.check([]byte(doc), tr)
		var out []string
		for _, f := range tr[checkTerminology] {
			if f.variant == "replaced" {
				out = append(out, f.text)
			}
		}
		p, _ := r.Pass(checkTerminology)
		return out, p
	}
	for _, c := range []struct{ rfc, from, to string }{
		{"2873-inline-asm.md", "", ""},
		{"3137-let-else.md", "", ""},
		{"3192-dyno.md", "type", "kind"},
		{"3537-msrv-resolver.md", "version", "release"},
		{"3654-return-type-notation.md", "bound", "constraint"},
	} {
		doc := readRFC(t, c.rfc)
		found, p := replaced(doc)
		if len(found) > 0 {
			t.Errorf("%s as written: %v", c.rfc, found)
		}
		if c.from == "" {
			continue
		}
		ed := secondHalf(doc, func(s string) string {
			return renameOutsideCode(s, regexp.MustCompile(`\b`+c.from+`(s?)\b`), c.to+"$1")
		})
		found, q := replaced(ed)
		ok := false
		for _, f := range found {
			ok = ok || strings.Contains(f, `"`+c.from+`"`) && strings.Contains(f, `"`+c.to+`"`)
		}
		if !ok || q >= p {
			t.Errorf("%s with %q renamed %q in its second half: terminology %.3f (as written %.3f), replacements %v",
				c.rfc, c.from, c.to, q, p, found)
		}
	}
}

// TestCoordinatedCompounds: RFC 3424 writes the compound adjective
// hyphenated before its noun and the noun phrase open, as English does:
// "single-file packages", "between single-file and multi-file packages",
// but "When a single file is not enough". The coordinated compound was
// not read as attributive (its next word is "and"), and with a
// parenthetical one ("Single-file (`.crs` extension) rust code") the two
// counted against the three open noun phrases. The control hyphenates
// one of the noun phrases ("When a single-file is not enough"), which
// must be flagged.
func TestCoordinatedCompounds(t *testing.T) {
	singleFile := func(doc string) []string {
		tr := trace{}
		Options{Template: rfcTemplate}.check([]byte(doc), tr)
		var out []string
		for _, f := range tr[checkTerminology] {
			if strings.Contains(f.text, `"single file"`) {
				out = append(out, f.text)
			}
		}
		return out
	}
	doc := readRFC(t, "3424-cargo-script.md")
	if f := singleFile(doc); len(f) > 0 {
		t.Errorf("3424 as written: %v", f)
	}
	ctl := replaceOnce(t, doc, "When a single file is not enough", "When a single-file is not enough")
	if f := singleFile(ctl); len(f) == 0 {
		t.Errorf("3424 with a noun phrase hyphenated: not flagged")
	}
}
