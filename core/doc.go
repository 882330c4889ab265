// Package core is troupe's public Dec-POMDP API: the spaces, specs,
// observations, actions and episodes that environments, reward functions,
// LLM backends and the runtime exchange.
//
// A collaborative task is an [Env]: each agent sees only its own
// [Observation] (a feature vector for its policy, a text context for its LLM
// and a mask of legal decisions) and picks a decision; decisions that need
// content get text from the agent's [LLM]. The environment steps on the joint
// [Action] with PettingZoo-parallel semantics, and [RewardFunc]s score the
// finished [Episode] into named components that the joint reward weighs.
//
// core imports none of troupe's other top-level packages; the runtime that
// trains policies with GRPO lives in core/runtime, and built-in tasks in envs/.
package core
