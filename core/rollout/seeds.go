package rollout

// Seeds: every random choice of a run derives from the master seed through
// these functions, so results do not depend on the number of workers or on
// the order in which episodes finish. Training task seeds are even and
// evaluation task seeds odd, so the two never overlap.

// DeriveSeed mixes values into a seed: the one way a run derives a seed
// from its master seed and a purpose.
func DeriveSeed(vals ...uint64) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, v := range vals {
		h ^= v + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
		h = splitDeriveSeed(h)
	}
	return h
}

func splitDeriveSeed(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// TrainTaskSeed returns the task seed of task t of iteration it.
func TrainTaskSeed(master uint64, it, t int) uint64 {
	return DeriveSeed(master, 0x747261696e, uint64(it), uint64(t)) &^ 1
}

// EvalTaskSeed returns the seed of evaluation episode i.
func EvalTaskSeed(evalSeed uint64, i int) uint64 {
	return DeriveSeed(evalSeed, 0x6576616c, uint64(i)) | 1
}

// RolloutSeed returns the sampling seed of rollout g of a task.
func RolloutSeed(task uint64, g int) uint64 { return DeriveSeed(task, 0x726f6c6c, uint64(g)) }

// llmSeed returns the seed of agent's LLM call at step.
func llmSeed(rollout uint64, step, agent int) uint64 {
	return DeriveSeed(rollout, 0x6c6c6d, uint64(step), uint64(agent))
}
