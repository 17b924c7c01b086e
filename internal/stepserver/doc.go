// Package stepserver serves kargo-fleet's promotion steps over HTTP(S): POST
// /v1/steps/<name> with a JSON Request, answered with a JSON Response whose
// state is Running, Succeeded or Failed.
//
// The Server runs in every replica of `kargo-fleet controller` (a refused
// connection fails a Kargo step at once). It decodes a request strictly
// (unknown fields, duplicate or case-folded keys and oversized bodies are
// refused), authenticates the caller with its Project's step token
// (package steptoken), checks that the named Promotion is Running and
// promotes a Stage the Project's FleetStage controls, and only then runs the
// step from its steps.Registry. A refusal is a 4xx with a reason, a
// transient error a 503 that Kargo polls again; every answer is JSON.
//
// Kargo OSS reaches it through the shipped ClusterPromotionTasks
// (charts/kargo-fleet/tasks), whose built-in http steps build the Request
// from Kargo's ctx; the Akuity Platform through `kargo-fleet step <name>`,
// which sends the same Request.
package stepserver
