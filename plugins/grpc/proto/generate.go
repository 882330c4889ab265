// Package troupepb holds troupe's go-plugin wire protocol: troupe.proto and
// the Go code generated from it (committed, so building troupe needs no
// protoc).
//
// To regenerate after editing troupe.proto, install protoc (Debian:
// apt-get install protobuf-compiler) and run, from the module root:
//
//	go generate ./plugins/grpc/proto/
//
// The code generators are pinned as tools in go.mod (go get -tool), so the
// output depends only on protoc's and go.mod's versions.
package troupepb

//go:generate sh -c "protoc --plugin=protoc-gen-go=\"$(go tool -n protoc-gen-go)\" --plugin=protoc-gen-go-grpc=\"$(go tool -n protoc-gen-go-grpc)\" --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative troupe.proto"
