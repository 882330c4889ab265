package classeval

import (
	"fmt"
	"strings"
)

// Values of rule.test.
const (
	testNever    = iota // never run examples
	testAlways          // run every method's examples
	testExamples        // run them while the method to test has visible examples
	testAfter           // once every method is claimed, every capable coder runs the examples of any untested method and rewrites (or takes over) any failing one, in parallel
)

// Values of rule.draft: how the first version of the methods is written.
const (
	draftMethods = iota // the capable coders implement the methods one by one
	draftClass          // the team's best whole-class writer writes the whole class in one call; the others wait for it
	draftMixed          // the same, while the other capable coders implement methods one by one from the front
)

// Values of rule.fix: who rewrites a visibly broken method (a reply cut
// off, a restated stub, no code: seen on reading it, without running
// anything) in a rule that does not test.
const (
	fixNone      = iota // nobody
	fixOwn              // its writer
	fixStrongest        // the team's strongest, who takes the others' over once everything is claimed
	fixAll              // every working coder, in parallel: its own, and the others' once everything is claimed
	fixFastest          // the fastest working coder (decode speed), who takes the others' over once everything is claimed
)

// rule is one member of a family of decentralized scripted policies:
// every coder follows it on what it knows (its own model, the team's
// make-up, its methods, the class's progress). The headroom test
// (headroom_test.go) enumerates the family and chooses among its members
// on training seeds; the baselines holistic, holistic_or_split, holistic_fix and
// strong_by_team are members of it.
type rule struct {
	share    float64 // capable: strength ≥ share × the team's best; the others submit at once
	one      bool    // only the cheapest capable coder works (the strongest at share 1)
	test     int     // testNever, testAlways, testExamples, testAfter
	rewrites int     // rewrites of a method that failed its examples (1 or 2; 0 when never testing)
	escalate bool    // failing methods go to the strongest, who rewrites them; the others never rewrite
	deps     bool    // dependencies first, in context (m_iter), waiting while dependencies are written
	draft    int     // draftMethods, draftClass, draftMixed
	trust    bool    // a method whose failure is an example fault (exampleFault) is not rewritten
	minM     int     // class and mixed drafts only for classes of at least minM methods (method by method below)
	maxM     int     // testAfter rewrites only in classes of at most maxM methods (0: any)
	fix      int     // fixNone, fixOwn, fixStrongest, fixAll, fixFastest (rules that never test; rewrites bounds the rewrites)
}

// String names the rule as the headroom test reports it, e.g.
// "class/m3+/cap0.60/all/notest/order".
func (r rule) String() string {
	var b strings.Builder
	b.WriteString([]string{"", "class/", "mixed/"}[r.draft])
	if r.minM > 0 {
		fmt.Fprintf(&b, "m%d+/", r.minM)
	}
	fmt.Fprintf(&b, "cap%.2f", r.share)
	if r.one {
		b.WriteString("/one")
	} else {
		b.WriteString("/all")
	}
	b.WriteString("/" + []string{"notest", "test", "test_ex", "fixup"}[r.test])
	b.WriteString([]string{"", "/fixown", "/fixbest", "/fixall", "/fixfast"}[r.fix])
	if r.test != testNever || r.fix != fixNone {
		fmt.Fprintf(&b, "/rw%d", r.rewrites)
		if r.maxM > 0 {
			fmt.Fprintf(&b, "/m<=%d", r.maxM)
		}
		if r.escalate {
			b.WriteString("/esc")
		}
		if r.trust {
			b.WriteString("/trust")
		}
	}
	if r.deps {
		b.WriteString("/deps")
	} else {
		b.WriteString("/order")
	}
	return b.String()
}

// worker reports whether coder i works under r.
func (r rule) worker(e *Env, i int) bool {
	best := e.agents[e.strongest()].strength
	capable := func(k int) bool { return e.agents[k].strength >= r.share*best }
	if !capable(i) {
		return false
	}
	if !r.one {
		return true
	}
	// The cheapest capable coder (the strongest among equally cheap ones,
	// then the lowest index): at share 1, the strongest.
	w := -1
	for k, a := range e.agents {
		if !capable(k) {
			continue
		}
		if w < 0 || a.model.OutputUSDPerMTok < e.agents[w].model.OutputUSDPerMTok ||
			(a.model.OutputUSDPerMTok == e.agents[w].model.OutputUSDPerMTok && a.strength > e.agents[w].strength) {
			w = k
		}
	}
	if r.share == 1 {
		w = e.strongest()
	}
	return i == w
}

// act is the rule's joint action: each coder's decision is its own.
func (r rule) act(e *Env) []int {
	s := e.strongest()
	acts := e.freeActs(func(i int) int {
		if !r.worker(e, i) {
			return decSubmit
		}
		return r.coder(e, i, s)
	})
	e.unstick(acts, func(i int) bool { return r.worker(e, i) })
	return acts
}

// coder is working coder i's decision (s is the team's strongest).
func (r rule) coder(e *Env, i, s int) int {
	lead := r.fixer(e, s)
	w := e.bestClassWriter()
	classDraft := r.draft != draftMethods && len(e.methods) >= r.minM
	if classDraft && i == w && len(e.samples) == 0 && e.legal(i, decWriteClass) {
		return decWriteClass
	}
	// Under a class draft the other coders wait for it, while the writer
	// works and has a sample to write.
	pending := classDraft && r.draft == draftClass && i != w && r.worker(e, w) &&
		((len(e.samples) == 0 && e.classSample(w) != "") || (len(e.samples) > 0 && !e.free(w)))
	if r.test == testAfter {
		return r.fixup(e, i, pending)
	}
	if (r.test != testNever || r.fix != fixNone) && r.rewrite(e, e.repairable(i)) && (!r.escalates() || i == lead) {
		return decRepair
	}
	if j := e.testable(i); r.test != testNever && j >= 0 && (r.test == testAlways || e.methods[j].info.Examples > 0) {
		return decRunExamples
	}
	if pending && e.nextUnclaimed() >= 0 {
		return decWait // the whole class is being written
	}
	if d := e.claim(i, r.deps); d >= 0 {
		return d
	}
	if (r.escalates() && i == lead) || r.fix == fixAll {
		if r.rewrite(e, e.takeable(i)) {
			return decTakeOver
		}
		if e.someoneBusy(i) {
			return decWait // a teammate's method may still fail, or land broken
		}
	}
	if r.draft != draftMethods && r.test != testNever && e.someoneBusy(i) {
		return decWait // a method may still fail its examples
	}
	return decSubmit
}

// escalates reports whether failing methods go to one coder (fixer), who
// rewrites them, and the others never rewrite.
func (r rule) escalates() bool {
	return r.escalate || r.fix == fixStrongest || r.fix == fixFastest
}

// fixer is the coder failing methods go to when r escalates: the fastest
// working coder under fixFastest (the stronger of equally fast ones), else
// the team's strongest, s.
func (r rule) fixer(e *Env, s int) int {
	if r.fix != fixFastest {
		return s
	}
	f := s
	for k, a := range e.agents {
		if r.worker(e, k) && a.model.DecodeTPS > e.agents[f].model.DecodeTPS {
			f = k
		}
	}
	return f
}

// rewrite reports whether r rewrites failing method j (-1: none): it has
// had fewer than r.rewrites rewrites, its failure is not an example fault
// the rule trusts, and the class is small enough (maxM).
func (r rule) rewrite(e *Env, j int) bool {
	return j >= 0 && e.rewritesOf(j) < r.rewrites && !(r.trust && exampleFault(e.methods[j])) && (r.maxM == 0 || len(e.methods) <= r.maxM)
}

// fixup is coder i's decision under testAfter: draft, then test and
// rewrite in parallel.
func (r rule) fixup(e *Env, i int, pending bool) int {
	if e.nextUnclaimed() >= 0 {
		if pending {
			return decWait // the whole class is being written
		}
		if d := e.claim(i, r.deps); d >= 0 {
			return d
		}
	}
	if e.legal(i, decRunExamples) {
		return decRunExamples
	}
	if r.rewrite(e, e.repairable(i)) {
		return decRepair
	}
	if r.rewrite(e, e.takeable(i)) {
		return decTakeOver
	}
	if e.someoneBusy(i) {
		return decWait // a method may still fail its examples
	}
	return decSubmit
}
