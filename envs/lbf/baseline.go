package lbf

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/troupe-dev/troupe/core"
)

// BaselineGreedyFood names the env's hand-written joint policy (see
// [Env.Baseline]).
const BaselineGreedyFood = "greedy_food"

// Baseline returns the named scripted policy. The env offers one,
// "greedy_food", a centralized planner that reads the env's state and
// re-plans every step:
//
//  1. distances: a breadth-first search from every free cell next to every
//     food left, through cells without food (players are not obstacles:
//     they move);
//  2. coalitions: among the players not yet assigned, every (food, subset)
//     whose summed level loads the food and that fits on the food's free
//     neighbouring cells is costed by its arrival time — the largest
//     distance of a member to its cell, under the best one-to-one choice of
//     cells, a member already next to the food keeping its own and no
//     member sent to a cell held by a non-member — and the cheapest is assigned (ties: fewer players, then the
//     higher food level, then the lower food index); repeated until no
//     coalition is possible;
//  3. the players left over, too weak together for any food left unassigned,
//     walk to the nearest such food and load there (a coalition may form
//     as foods go); if every food is assigned they wait;
//  4. moves: a player next to its food loads; otherwise it takes the legal
//     move that shortens its distance to its cell and that no player before
//     it (index order) moves into this step, or waits when there is none;
//     after two steps in a row without moving while it wanted to, it takes a random
//     legal move (a generator seeded by the step and the positions, so the
//     policy is deterministic) to break a standoff.
//
// It is the strongest rule we wrote, not a proven optimum: greedy
// assignment can commit players to a food that a better plan would leave
// for later.
func (e *Env) Baseline(name string) (core.Baseline, error) {
	if name != BaselineGreedyFood {
		return nil, fmt.Errorf("lbf: no baseline %q (the env has %q)", name, BaselineGreedyFood)
	}
	return &greedyFood{e: e}, nil
}

// greedyFood is the "greedy_food" baseline bound to one env.
type greedyFood struct {
	e *Env
	// last[i] is player i's cell after the previous step, stuck[i] the
	// steps in a row it wanted to move and did not; t the step they are of.
	last  []int
	stuck []int
	t     int
	// dist[f][k][cell] is the number of moves from cell to the k-th free
	// neighbour of food f (−1: unreachable), cells[f] those neighbours.
	dist  [][][]int
	cells [][]int
	queue []int
}

const unreachable = 1 << 30

// Act returns every player's decision for the current step.
func (g *greedyFood) Act(obs []core.Observation) ([]int, error) {
	e := g.e
	if !e.started || e.done {
		return nil, fmt.Errorf("lbf: %s: no episode in progress", BaselineGreedyFood)
	}
	n, size := len(e.players), e.p.Size
	if e.t == 0 || g.last == nil || e.t != g.t+1 {
		g.last, g.stuck = make([]int, n), make([]int, n)
		for i := range g.last {
			g.last[i] = -1
		}
	}
	for i, pl := range e.players {
		if g.last[i] == pl.r*size+pl.c && g.stuck[i] >= 0 {
			g.stuck[i]++ // wanted to move last step and did not
		} else {
			g.stuck[i] = 0
		}
	}
	g.t = e.t

	// 1. Distances.
	var alive []int
	for fi, f := range e.foods {
		if f.alive {
			alive = append(alive, fi)
		}
	}
	g.dist, g.cells = g.dist[:0], g.cells[:0]
	for _, fi := range alive {
		f := e.foods[fi]
		var cs []int
		var ds [][]int
		for _, a := range [4]int{North, South, West, East} {
			r, c := f.r+drow[a], f.c+dcol[a]
			if r < 0 || r >= size || c < 0 || c >= size || e.foodAt[r*size+c] != 0 {
				continue
			}
			cs = append(cs, r*size+c)
			ds = append(ds, g.bfs(r*size+c))
		}
		g.cells, g.dist = append(g.cells, cs), append(g.dist, ds)
	}

	// 2. Coalitions. goal[i] is the index in alive of player i's food, or
	// −1; cell[i] its cell (−1: any neighbour of the food).
	goal, cell := make([]int, n), make([]int, n)
	for i := range goal {
		goal[i], cell[i] = -1, -1
	}
	assigned := make([]bool, len(alive))
	free := uint(1)<<n - 1
	for free != 0 {
		best := struct {
			fa, size, level, cost int
			set                   uint
			cells                 []int
		}{fa: -1}
		for fa, fi := range alive {
			if assigned[fa] {
				continue
			}
			f := e.foods[fi]
			for set := free; set != 0; set = (set - 1) & free {
				k := bits.OnesCount(set)
				if k > len(g.cells[fa]) || g.levels(set) < f.level {
					continue
				}
				cost, cs := g.arrival(set, fa)
				if cost >= unreachable {
					continue
				}
				if best.fa < 0 || cost < best.cost || cost == best.cost && (k < best.size || k == best.size && f.level > best.level) {
					best.fa, best.size, best.level, best.cost, best.set, best.cells = fa, k, f.level, cost, set, cs
				}
			}
		}
		if best.fa < 0 {
			break
		}
		assigned[best.fa] = true
		j := 0
		for i := range n {
			if best.set&(1<<i) != 0 {
				goal[i], cell[i] = best.fa, best.cells[j]
				j++
			}
		}
		free &^= best.set
	}

	// 3. The players left over go to the nearest unassigned food.
	for i := range n {
		if free&(1<<i) == 0 {
			continue
		}
		from := e.players[i].r*size + e.players[i].c
		bd := unreachable
		for fa := range alive {
			if assigned[fa] {
				continue
			}
			for k := range g.cells[fa] {
				if d := g.dist[fa][k][from]; d >= 0 && d < bd {
					bd, goal[i], cell[i] = d, fa, k
				}
			}
		}
	}

	// 4. Moves.
	acts := make([]int, n)
	taken := make(map[int]bool, n)
	for i, pl := range e.players {
		from := pl.r*size + pl.c
		g.last[i] = from
		if goal[i] < 0 {
			g.stuck[i] = -1 // not trying to move
			continue
		}
		fi := alive[goal[i]]
		if f := e.foods[fi]; abs(pl.r-f.r)+abs(pl.c-f.c) == 1 {
			acts[i] = Load
			g.stuck[i] = -1
			continue
		}
		d := g.dist[goal[i]][cell[i]]
		here := d[from]
		move, moveD := None, unreachable
		var legal []int
		for _, a := range [4]int{North, South, West, East} {
			if !e.legal(i, a) {
				continue
			}
			to := (pl.r+drow[a])*size + pl.c + dcol[a]
			if taken[to] {
				continue
			}
			legal = append(legal, a)
			if d[to] >= 0 && d[to] < moveD && d[to] < here {
				move, moveD = a, d[to]
			}
		}
		if g.stuck[i] >= 2 && len(legal) > 0 {
			rng := rand.New(rand.NewPCG(uint64(e.t)<<8|uint64(i), g.positionsHash()))
			move = legal[rng.IntN(len(legal))]
			g.stuck[i] = 0
		}
		acts[i] = move
		if move != None {
			taken[(pl.r+drow[move])*size+pl.c+dcol[move]] = true
		}
	}
	return acts, nil
}

// levels sums the levels of the players in set.
func (g *greedyFood) levels(set uint) int {
	s := 0
	for i, pl := range g.e.players {
		if set&(1<<i) != 0 {
			s += pl.level
		}
	}
	return s
}

// arrival returns the arrival time of the players in set at food fa (the
// largest distance of a member to its cell under the best one-to-one
// choice of the food's free neighbours) and, for the members in index
// order, the index of their cell.
func (g *greedyFood) arrival(set uint, fa int) (int, []int) {
	e, size := g.e, g.e.p.Size
	var members []int
	for i := range e.players {
		if set&(1<<i) != 0 {
			members = append(members, i)
		}
	}
	nc := len(g.cells[fa])
	best, bestCells := unreachable, []int(nil)
	cs := make([]int, len(members))
	used := make([]bool, nc)
	var try func(m, cost int)
	try = func(m, cost int) {
		if cost >= best {
			return
		}
		if m == len(members) {
			best, bestCells = cost, slices.Clone(cs)
			return
		}
		pl := e.players[members[m]]
		from := pl.r*size + pl.c
		adjacent := slices.Contains(g.cells[fa], from)
		for k := range nc {
			d := g.dist[fa][k][from]
			if used[k] || d < 0 || adjacent && g.cells[fa][k] != from {
				continue // a player next to the food keeps its cell: it loads there
			}
			if o := e.playerAt[g.cells[fa][k]]; o != 0 && set&(1<<(o-1)) == 0 {
				continue // held by a player outside the coalition
			}
			used[k], cs[m] = true, k
			try(m+1, max(cost, d))
			used[k] = false
		}
	}
	try(0, 0)
	return best, bestCells
}

// bfs returns the distances from every cell to cell start through cells
// without food (−1 where unreachable).
func (g *greedyFood) bfs(start int) []int {
	e, size := g.e, g.e.p.Size
	d := make([]int, size*size)
	for i := range d {
		d[i] = -1
	}
	d[start] = 0
	g.queue = append(g.queue[:0], start)
	for q := 0; q < len(g.queue); q++ {
		cur := g.queue[q]
		r, c := cur/size, cur%size
		for _, a := range [4]int{North, South, West, East} {
			rr, cc := r+drow[a], c+dcol[a]
			if rr < 0 || rr >= size || cc < 0 || cc >= size {
				continue
			}
			next := rr*size + cc
			if d[next] >= 0 || e.foodAt[next] != 0 {
				continue
			}
			d[next] = d[cur] + 1
			g.queue = append(g.queue, next)
		}
	}
	return d
}

// positionsHash mixes the players' cells into a seed word.
func (g *greedyFood) positionsHash() uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, pl := range g.e.players {
		h ^= uint64(pl.r*g.e.p.Size + pl.c + 1)
		h *= 0xbf58476d1ce4e5b9
	}
	return h
}
