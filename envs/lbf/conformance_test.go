package lbf

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
)

// The reference trajectories in testdata/ were recorded from lbforaging
// (semitable/lb-foraging at 79f383b, MIT, testdata/LICENSE) through
// gym.make(ID) with its registered v3 settings; testdata/README.md describes
// the format. Each configuration below is one of those IDs and the params
// that select the same game here.
var referenceConfigs = []struct {
	id     string
	params map[string]any
	// minExact is the share of steps (continuous replay, every field
	// compared) that must match exactly, and minRuleExact the share of steps
	// played from the reference's own state before the step; both are the
	// measured fractions rounded down (BENCHMARKS.md, "Conformance of envs/lbf
	// with the reference implementation"), so a rule change that costs one step in a
	// thousand fails here.
	minExact, minRuleExact float64
}{
	{"Foraging-8x8-2p-2f-coop-v3", map[string]any{"size": 8, "players": 2, "foods": 2, "coop": true}, 0.824, 0.965},
	{"Foraging-10x10-3p-3f-v3", map[string]any{"size": 10, "players": 3, "foods": 3, "coop": false}, 0.743, 0.956},
	{"Foraging-15x15-4p-3f-v3", map[string]any{"size": 15, "players": 4, "foods": 3, "coop": false}, 0.684, 0.958},
}

type refPlayer struct {
	Pos   [2]int `json:"pos"`
	Level int    `json:"level"`
}

type refStep struct {
	Actions    []int       `json:"actions"`
	Rewards    []float64   `json:"rewards"`
	Players    []refPlayer `json:"players"`
	Food       [][3]int    `json:"food"`
	Terminated bool        `json:"terminated"`
	Truncated  bool        `json:"truncated"`
	Obs        [][]float64 `json:"obs"`
}

type refEpisode struct {
	Env     string `json:"env"`
	Seed    int64  `json:"seed"`
	Initial struct {
		Players []refPlayer `json:"players"`
		Food    [][3]int    `json:"food"`
		Step    int         `json:"step"`
	} `json:"initial"`
	InitialObs [][]float64 `json:"initial_obs"`
	Steps      []refStep   `json:"steps"`
}

func readReference(t *testing.T, id string) []refEpisode {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", id+".jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	var eps []refEpisode
	sc := bufio.NewScanner(gz)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var ep refEpisode
		if err := json.Unmarshal(sc.Bytes(), &ep); err != nil {
			t.Fatalf("%s:%d: %v", id, line, err)
		}
		if ep.Env != id {
			t.Fatalf("%s:%d: env %q", id, line, ep.Env)
		}
		eps = append(eps, ep)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	return eps
}

// The kinds of step on which the env and the reference differ. Every
// mismatch must be one of them.
const (
	// kindSwap: in the reference two players exchanged cells (a move into
	// a cell occupied at the start of the step is legal there, illegal
	// here: the package doc's deviation).
	kindSwap = "swap"
	// kindFollow: in the reference a player moved into a cell that another
	// player left in the same step (legal there, illegal here, for the
	// same reason).
	kindFollow = "follow"
	// kindShare: in the reference two players ended on one cell (a mover
	// entered the cell of a player whose own move failed in a collision).
	kindShare = "share"
	// kindTimeLimit: everything matches but the flags at the time limit:
	// lbforaging ends the episode at max_episode_steps with
	// terminated = true, truncated = false; here a time limit is a
	// truncation (terminated = false, truncated = true), as Gymnasium and
	// core.StepResult define it.
	kindTimeLimit = "time limit reported as terminated"
	// kindDownstream: the state before the step already differed, because
	// of an earlier step of one of the kinds above in the same episode.
	kindDownstream = "after an earlier deviation in the episode"
	// kindSharedStart: (replay from the reference's state only) the
	// reference's state before the step has two players on one cell, which
	// the env cannot represent.
	kindSharedStart = "starts from a shared cell"
)

// referenceMoveKinds returns the kinds of the reference's transition from
// the players at before to those at after that the env's rules do not allow
// (swap, follow, share), or nil.
func referenceMoveKinds(before, after []refPlayer) []string {
	var kinds []string
	add := func(k string) {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	for i := range after {
		if after[i].Pos == before[i].Pos {
			continue
		}
		for j := range before {
			if j != i && after[i].Pos == before[j].Pos {
				if after[j].Pos == before[i].Pos {
					add(kindSwap)
				} else {
					add(kindFollow)
				}
			}
		}
	}
	for i := range after {
		for j := range i {
			if after[i].Pos == after[j].Pos {
				add(kindShare)
			}
		}
	}
	return kinds
}

// stateOf returns the env's players and remaining foods in the reference's
// terms (foods row-major, as the reference lists them).
func stateOf(e *Env) ([]refPlayer, [][3]int) {
	players := make([]refPlayer, len(e.players))
	for i, p := range e.players {
		players[i] = refPlayer{Pos: [2]int{p.r, p.c}, Level: p.level}
	}
	foods := [][3]int{}
	for _, k := range e.order {
		if f := e.foods[k]; f.alive {
			foods = append(foods, [3]int{f.r, f.c, f.level})
		}
	}
	return players, foods
}

// stepMatch compares the env's result of one step with the reference's:
// it returns "" when every field is equal, kindTimeLimit when only the
// time-limit flags differ, else a description of the first difference.
func stepMatch(e *Env, res core.StepResult, want refStep) string {
	players, foods := stateOf(e)
	switch {
	case !reflect.DeepEqual(players, want.Players):
		return fmt.Sprintf("players %v, reference %v", players, want.Players)
	case !reflect.DeepEqual(foods, append([][3]int{}, want.Food...)):
		return fmt.Sprintf("food %v, reference %v", foods, want.Food)
	case !slices.Equal(res.Rewards, want.Rewards):
		return fmt.Sprintf("rewards %v, reference %v", res.Rewards, want.Rewards)
	}
	for i, o := range res.Observations {
		if !slices.Equal(o.Features, want.Obs[i]) {
			return fmt.Sprintf("agent %d observation %v, reference %v", i, o.Features, want.Obs[i])
		}
	}
	if res.Terminated == want.Terminated && res.Truncated == want.Truncated {
		return ""
	}
	if want.Terminated && !want.Truncated && res.Truncated && !res.Terminated && e.t == e.p.MaxSteps && len(foods) > 0 {
		return kindTimeLimit
	}
	return fmt.Sprintf("terminated %v truncated %v, reference %v %v", res.Terminated, res.Truncated, want.Terminated, want.Truncated)
}

func triples(players []refPlayer) [][3]int {
	out := make([][3]int, len(players))
	for i, p := range players {
		out[i] = [3]int{p.Pos[0], p.Pos[1], p.Level}
	}
	return out
}

func actionsOf(decisions []int) []core.Action {
	acts := make([]core.Action, len(decisions))
	for i, d := range decisions {
		acts[i].Decision = d
	}
	return acts
}

// conformance is one configuration's tally.
type conformance struct {
	episodes, steps, exact int
	kinds                  map[string]int // mismatching steps by kind ("swap+follow": both in one step)
	unclassified           []string       // mismatches of no known kind
}

func (c *conformance) add(kind string) {
	if c.kinds == nil {
		c.kinds = map[string]int{}
	}
	c.kinds[kind]++
}

// replayContinuous plays each episode from its initial state with the
// recorded actions and compares every step.
func replayContinuous(t *testing.T, params map[string]any, eps []refEpisode) conformance {
	e := rawEnv(t, params)
	var c conformance
	for n, ep := range eps {
		c.episodes++
		spawned := 0
		for _, f := range ep.Initial.Food {
			spawned += f[2]
		}
		if err := e.startFrom(triples(ep.Initial.Players), ep.Initial.Food, spawned, 0); err != nil {
			t.Fatalf("episode %d: %v", n, err)
		}
		for i, o := range e.observations(make([]float64, len(e.players)*e.obsSize), len(e.players)) {
			if !slices.Equal(o.Features, ep.InitialObs[i]) {
				t.Fatalf("episode %d: initial observation of agent %d %v, reference %v", n, i, o.Features, ep.InitialObs[i])
			}
		}
		prev := ep.Initial.Players
		prevFood := ep.Initial.Food
		for k, st := range ep.Steps {
			c.steps++
			ourPlayers, ourFoods := stateOf(e)
			inSync := reflect.DeepEqual(ourPlayers, prev) && reflect.DeepEqual(ourFoods, append([][3]int{}, prevFood...))
			res, err := e.Step(actionsOf(st.Actions))
			if err != nil {
				t.Fatalf("episode %d step %d: %v", n, k+1, err)
			}
			switch diff := stepMatch(e, res, st); {
			case diff == "":
				c.exact++
			case !inSync:
				c.add(kindDownstream)
			case diff == kindTimeLimit:
				c.add(kindTimeLimit)
			default:
				kinds := referenceMoveKinds(prev, st.Players)
				if len(kinds) == 0 {
					c.unclassified = append(c.unclassified, fmt.Sprintf("episode %d (seed %d) step %d, actions %v: %s", n, ep.Seed, k+1, st.Actions, diff))
					continue
				}
				c.add(strings.Join(kinds, "+"))
			}
			prev, prevFood = st.Players, st.Food
			if res.Done() && k != len(ep.Steps)-1 {
				t.Fatalf("episode %d: the env ended at step %d of the reference's %d", n, k+1, len(ep.Steps))
			}
		}
	}
	return c
}

// replayFromReference plays every step from the reference's own state
// before it, so each step tests the rules alone.
func replayFromReference(t *testing.T, params map[string]any, eps []refEpisode) conformance {
	e := rawEnv(t, params)
	var c conformance
	for n, ep := range eps {
		c.episodes++
		spawned := 0
		for _, f := range ep.Initial.Food {
			spawned += f[2]
		}
		prev, prevFood := ep.Initial.Players, ep.Initial.Food
		for k, st := range ep.Steps {
			c.steps++
			if err := e.startFrom(triples(prev), prevFood, spawned, k); err != nil {
				if hasSharedCell(prev) {
					c.add(kindSharedStart)
				} else {
					t.Fatalf("episode %d step %d: %v", n, k+1, err)
				}
				prev, prevFood = st.Players, st.Food
				continue
			}
			res, err := e.Step(actionsOf(st.Actions))
			if err != nil {
				t.Fatalf("episode %d step %d: %v", n, k+1, err)
			}
			switch diff := stepMatch(e, res, st); {
			case diff == "":
				c.exact++
			case diff == kindTimeLimit:
				c.add(kindTimeLimit)
			default:
				kinds := referenceMoveKinds(prev, st.Players)
				if len(kinds) == 0 {
					c.unclassified = append(c.unclassified, fmt.Sprintf("episode %d (seed %d) step %d, actions %v: %s", n, ep.Seed, k+1, st.Actions, diff))
					continue
				}
				c.add(strings.Join(kinds, "+"))
			}
			prev, prevFood = st.Players, st.Food
		}
	}
	return c
}

func hasSharedCell(players []refPlayer) bool {
	for i := range players {
		for j := range i {
			if players[i].Pos == players[j].Pos {
				return true
			}
		}
	}
	return false
}

// TestConformanceWithReference replays the reference implementation's
// recorded trajectories: every step must match exactly or differ for a
// classified reason, and the exact shares must not fall.
func TestConformanceWithReference(t *testing.T) {
	for _, cfg := range referenceConfigs {
		t.Run(cfg.id, func(t *testing.T) {
			eps := readReference(t, cfg.id)
			for _, mode := range []struct {
				name string
				run  func(*testing.T, map[string]any, []refEpisode) conformance
				min  float64
			}{
				{"continuous", replayContinuous, cfg.minExact},
				{"from reference state", replayFromReference, cfg.minRuleExact},
			} {
				c := mode.run(t, cfg.params, eps)
				frac := float64(c.exact) / float64(c.steps)
				t.Logf("%s, %s: %d episodes, %d steps, %d exact (%.4f); others: %v", cfg.id, mode.name, c.episodes, c.steps, c.exact, frac, c.kinds)
				for _, u := range c.unclassified {
					t.Errorf("%s: unclassified mismatch: %s", mode.name, u)
				}
				if frac < mode.min {
					t.Errorf("%s: exact share %.4f, want ≥ %.4f", mode.name, frac, mode.min)
				}
			}
		})
	}
}
