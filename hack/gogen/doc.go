// Package gogen holds what podtrace's code generators share: the naming of
// the packages a generated file imports and of the types and functions it
// declares, and the writing of the file. Its users are
// tracer/internal/jsongen (tracer/zz_generated_json.go) and
// diff/internal/walkgen (diff/zz_generated_walk.go); a change here changes
// both files, which their up-to-date tests check. It is build-time tooling,
// kept under hack/ with the scripts: no package of the product imports it.
//
// Imports names an imported package after the last element of its path,
// prefixed with the element before it for a Kubernetes API version
// (k8s.io/api/core/v1 is corev1), numbered when the name is taken.
// Idents makes the names of generated functions unique the same way.
// Main is a generator's main function: it writes what the generator
// returns to the file its -o flag names, or to standard output for -o -.
package gogen
