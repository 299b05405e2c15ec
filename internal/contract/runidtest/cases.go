// Package runidtest holds the table of run ids that every user of
// contract.ValidateRunID tests against (the bench config, the demo config, the exporter's
// phase API), so an id one of them accepts and another refuses fails a test.
package runidtest

import "strings"

// Case is one id and whether it is valid.
type Case struct {
	ID    string
	Valid bool
}

// Cases covers the grammar's edges. Every id valid before the run-id
// package existed (bench and demo: [A-Za-z0-9][A-Za-z0-9._-]{0,127}; the
// exporter also ':') stays valid.
var Cases = []Case{
	{"r1", true},
	{"a", true},
	{"0", true},
	{"20261130T113711Z-3f9a0c1b2d4e", true},
	{"sweep-c16", true},
	{"sweep-r0_5", true},
	{"v1.2.3_rc-1", true},
	{"job:42", true},
	{"ns:job:7-0", true},
	{strings.Repeat("x", 128), true},

	{"", false},
	{strings.Repeat("x", 129), false},
	{".", false},
	{"..", false},
	{".hidden", false},
	{"-dash", false},
	{"_under", false},
	{":colon", false},
	{"a/b", false},
	{"../etc", false},
	{`a\b`, false},
	{"a b", false},
	{"a\nb", false},
	{"a\x00b", false},
	{`a"b`, false},
	{"a{b}", false},
	{"a,b", false},
	{"a=b", false},
	{"a%2Fb", false},
	{"a?b", false},
	{"a#b", false},
	{"é", false},
	{"aé", false},
}
