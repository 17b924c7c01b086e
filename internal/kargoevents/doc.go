// Package kargoevents shows kargo-fleet's decisions on Kargo's Events page.
//
// Kargo's Project Events page (API ListProjectEvents, Kargo v1.11.2
// pkg/server/list_project_events_v1alpha1.go) lists only core/v1 Events
// whose involvedObject is in the kargo.akuity.io API group, sorted by
// lastTimestamp, and shows their message, reason, count and first and last
// timestamps. kargo-fleet's own Events are about FleetStages and
// FleetRollouts (group fleet.kargo-fleet.io), so the page filters every one
// of them out. An events.k8s.io Event about a Kargo object would be listed,
// but without the timestamps and count the page shows (they are core/v1
// fields), at the bottom of the list.
//
// Recorder wraps kargo-fleet's Event recorder: an Event recorded with a
// related Kargo object (a wave or target Stage, a Freight) is recorded as
// before about the kargo-fleet object, and also as a core/v1 Event about
// the Kargo object, the way Kargo records its own.
package kargoevents
