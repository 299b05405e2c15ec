// Package codeshape holds repository-wide checks of the code's shape that
// no linter in CI makes: how long a function may grow. It has no API.
package codeshape
