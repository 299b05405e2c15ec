// Package phaseapi holds the exporter's lifecycle phase API: the JSON
// documents the API serves and a client for it, one schema for both sides
// (the phase names are the contract's, internal/contract).
package phaseapi
