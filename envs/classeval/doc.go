// Package classeval is the built-in team-coding task "classeval": a team of
// coder agents, each backed by one real LLM, implements one ClassEval class
// (Du et al. 2023, arXiv 2308.01861), and every line of code an agent
// "writes" is a completion that model actually wrote for that method,
// replayed from the benchmark authors' published outputs. The class is
// scored by the benchmark's own unittest suite, run for real in the
// sandbox. No LLM is called and nothing is simulated: results are labelled
// "replay" ([Backend]).
//
// # Episode
//
// A task seed draws one class and a team: Params.Agents distinct models
// from Params.Pool (default 3 of the 8 models with method-level outputs).
// Each agent observes its own model (its strength, price and speed) and
// the team's make-up. An agent's decisions are:
//
//	wait             idle until the next moment some agent becomes free
//	implement        claim the first unclaimed method (class order) and write
//	                 it from the skeleton: its model's m_dire completion
//	implement_ready  claim the first unclaimed method whose dependencies
//	                 (methods_info[].dependencies.method_dependencies) have
//	                 code and write it with the written methods in context:
//	                 its model's m_iter completion (only models with m_iter)
//	write_class      write the whole class in one call: its model's next
//	                 whole-class sample (c_t0, then c_5#0…#4) not replayed
//	                 yet; it claims nothing while it runs, and when it ends
//	                 the reply's code lands on every method still unclaimed
//	                 (ClassEval's holistic generation, which the paper finds
//	                 suits the strongest models and fails the others)
//	run_examples     run the `>>>` examples of the docstring of its first
//	                 method with untested code (else the team's first), in
//	                 the sandbox, on the class as it stands; the doctest
//	                 report lands in its context
//	repair           rewrite its failing method (below): another real
//	                 completion of that method by its model, the first not
//	                 yet used of m_dire, m_iter (once the dependencies have
//	                 code), the whole-class samples c_t0, c_5#0…#4; of its
//	                 failing methods, the first whose failure is not an
//	                 example fault (below), else the first
//	take_over        the same on a teammate's failing method, which becomes
//	                 its own: hand a method to a stronger (or cheaper) coder
//	submit           declare its work done; it then only waits
//
// A method is failing when its current reply is visibly broken — cut off
// mid-code, a restatement of the skeleton's stub, or no code of the method
// (suite.ExtractStatus), which its writer sees on reading the reply,
// without running anything — or when its examples failed.
//
// # Examples
//
// A method's examples run with doctest as a developer would run them: the
// names they use before assigning them are bound first from the class's
// own docstrings (">>> system = AssessmentSystem()" in one method's
// docstring serves the next one's "system.add_student(…)"), or to an
// instance built without arguments when no docstring builds one. Each
// failed example is classed: a wrong output; the right value printed
// otherwise than the docstring writes it ("3.0" for "3.00"); an exception
// raised in the class's code; an exception raised by the example itself
// (a file or a name the docstring assumes). The last two kinds of failure
// say little about the code ("example faults"): ClassEval's docstring
// examples are illustrations, and the canonical solution passes those of
// 164 of the 268 methods that have examples. Agents observe the kinds.
//
// # Time and money
//
// The clock is virtual and event-driven. A write is one LLM call: its
// prompt is the text a real call would send (the skeleton, the written
// methods for implement_ready, the failing code and report for a rewrite)
// and its completion the recorded reply (for a whole-class sample, the
// whole class); both are counted in tokens by the suite's tokenizer. The
// call first waits for the team's shared rate limit (internal/ratelimit:
// Params.RequestsPerMinute and TokensPerMinute, a sliding 60 s window,
// first come first served), then takes its model's latency from the model
// table ([Models]: time to first token + prompt/prefill + completion/
// decode throughput), and costs its model's prices. An examples run takes
// the sandbox run's deterministic duration from the suite. Work lands
// when it ends; code becomes visible to teammates then.
//
// # Score
//
// When every agent has submitted, the class is assembled from the
// methods' final code (a method never written, or whose reply held no
// code, stays the skeleton's stub) and the class's full unittest suite,
// hidden from the agents, runs in the sandbox: pass_rate is the fraction
// of methods whose TestCase passes, class_pass whether every TestCase
// (the class-level one included) passes; broken_share is the fraction of
// methods submitted visibly broken or never written. A class whose tests
// hang or crash scores what did not pass as failed; it never fails the
// episode.
//
// # References
//
// reference_makespan_s, reference_tokens and reference_dollars are what
// the team's strongest model takes, spends and costs writing every method
// once from the skeleton, one call after another, with no tests, queue or
// rewrites: the speed and cost rewards' yardstick ("makespan",
// "classeval.dollars"). The evaluation's speedup is measured against the
// single_agent baseline's real makespan.
//
// # Python
//
// The classes run with /usr/bin/python3 in the sandbox, with the libraries
// they import (numpy, pandas, gensim…: nine of the shipped classes import
// one). [New] asks the sandbox's interpreter where it would find every
// module the classes to play import, in their code and their tests, and
// refuses to start when one is missing, naming the modules, the classes
// and the Debian packages: those classes' tests would fail whatever the
// code, and every score would change.
//
// A dataset of a user's own (Params.Dataset) is checked before it is
// played: every canonical solution of the classes to play runs against its
// class's tests, and a class whose canonical solution fails is refused
// (the shipped classes were checked on the reference machine:
// suite.EmbeddedExclusions).
//
// # Split
//
// The classes whose task number is 1 mod 4 (ClassEval_1, _5, …) are held
// out: with the default split "by_seed" training (even task seeds) plays
// only the others and evaluation (odd task seeds) only these.
package classeval
