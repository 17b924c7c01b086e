// Package audit is the model of a FleetStage's audit trail: the hash chain
// over its records, how records are laid out in FleetAuditSegments, how a
// trail is verified, filtered and exported, and how a decision's Event
// becomes a record. It is pure: the controller's writer
// (internal/auditstore), `kargo-fleet audit` and the dashboard do the I/O
// and all read the trail through it.
package audit
