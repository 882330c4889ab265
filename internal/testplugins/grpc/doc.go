// Package grpc holds plugin binaries that the tests of plugins/grpc build
// and load: lbf (the built-in LBF env served with the serve kit, for the
// conformance test and the benchmark) and faulty (the counter env and reward
// function, which implement every optional interface and crash, hang, panic
// or log on request; also built with a wrong handshake). They are not meant
// for users.
package grpc
