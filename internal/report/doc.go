// Package report turns a FleetStage and its FleetRollouts into what an
// operator reads: a summary of targets and waves, the version distribution,
// a progress bar per wave, and failures grouped by reason. It is pure: the
// caller reads the objects and passes the time, so the same input always
// renders the same text (golden tests in testdata/).
//
// `kargo-fleet status` and the demo (`make demo`) both render with it.
package report
