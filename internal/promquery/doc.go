// Package promquery takes the measurements of a wave analysis from
// Prometheus: instant and range queries through client_golang's HTTP API
// client, each under a timeout, their results turned into the analysis
// package's Value, and failures classified so the analysis can tell a bad
// query (Prometheus's own message, fails until the spec changes) from a
// Prometheus that is unreachable, slow or erroring (the wave waits).
//
// Credentials (a bearer token or basic auth) and TLS (a CA, a client
// certificate) come from values the caller read from a Secret; nothing here
// reads files or the cluster.
package promquery
