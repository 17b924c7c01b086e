package policy

import (
	"fmt"
	"strings"

	"github.com/expr-lang/expr/vm"
)

// Block is one rule that keeps a Freight off a target.
type Block struct {
	// Policy and Rule name the FreightPolicy and its rule.
	Policy, Rule string
	// Reason says, for people, what the rule demands and why it failed:
	// the rule's message, or its require expression, or the evaluation
	// error (an expression that fails blocks: compliance fails closed).
	Reason string
	// AllowBreakGlass says break-glass may bypass the rule.
	AllowBreakGlass bool
	// Hold says the policy holds a wave with a blocked target. An
	// inconclusive block always holds, whatever the policy says.
	Hold bool
	// Inconclusive says the rule blocks because an image's signature
	// could not be verified yet (its registry unreachable): the block is
	// not final, and the target waits rather than being skipped.
	Inconclusive bool
}

// String reads "rule <rule> of FreightPolicy <policy>: <reason>".
func (b Block) String() string {
	return fmt.Sprintf("rule %s of FreightPolicy %s: %s", b.Rule, b.Policy, b.Reason)
}

// Verdict is what the policies say about one Freight on one target.
type Verdict struct {
	// Blocks are the rules that keep the Freight off the target, in policy
	// order (as given to Check) and rule order.
	Blocks []Block
}

// Allowed says no rule blocks the Freight.
func (v Verdict) Allowed() bool { return len(v.Blocks) == 0 }

// BreakGlassAllowed says every blocking rule lets break-glass through.
func (v Verdict) BreakGlassAllowed() bool {
	for _, b := range v.Blocks {
		if !b.AllowBreakGlass {
			return false
		}
	}
	return true
}

// Hold says a wave holding the target never passes while it is blocked.
func (v Verdict) Hold() bool {
	for _, b := range v.Blocks {
		if b.Hold {
			return true
		}
	}
	return false
}

// Inconclusive says a block is only there because a signature could not
// be verified yet: the check is worth making again.
func (v Verdict) Inconclusive() bool {
	for _, b := range v.Blocks {
		if b.Inconclusive {
			return true
		}
	}
	return false
}

// String joins the blocks for a message.
func (v Verdict) String() string {
	parts := make([]string, len(v.Blocks))
	for i, b := range v.Blocks {
		parts[i] = b.String()
	}
	return strings.Join(parts, "; ")
}

// Checker evaluates rules, reusing one VM. It is not safe for concurrent
// use: each caller (a reconcile, an admission) makes its own; the
// compiled policies it reads are shared.
type Checker struct {
	machine vm.VM
	env     env
}

// Check says whether freight may run on target under policies (those that
// govern the target's Project, see Compiled.Governs). sigs are the
// verifications of the Freight's images against the policies'
// Requirements; an image it lacks counts as not verified yet.
func (k *Checker) Check(policies []*Compiled, freight *Freight, sigs Signatures, target *Target) Verdict {
	var v Verdict
	k.env = env{Target: *target, Freight: *freight}
	for _, p := range policies {
		for i := range p.rules {
			r := &p.rules[i]
			if r.targets != nil {
				governed, err := k.run(r.targets)
				if err != nil {
					v.Blocks = append(v.Blocks, p.block(r, "its targets expression could not be evaluated: "+err.Error()))
					continue
				}
				if !governed {
					continue
				}
			}
			if b, blocked := k.checkRule(p, r, freight, sigs); blocked {
				v.Blocks = append(v.Blocks, b)
			}
		}
	}
	return v
}

// checkRule checks one rule on a target it governs: its require
// expression first, then its signatures.
func (k *Checker) checkRule(p *Compiled, r *rule, freight *Freight, sigs Signatures) (Block, bool) {
	if r.check != nil {
		ok, err := k.run(r.check)
		switch {
		case err != nil:
			return p.block(r, "its require expression could not be evaluated: "+err.Error()), true
		case !ok:
			reason := r.message
			if reason == "" {
				reason = "the Freight does not satisfy " + r.require
			}
			return p.block(r, reason), true
		}
	}
	if r.signatures == nil {
		return Block{}, false
	}
	reason, inconclusive, ok := checkSignatures(sigs, freight, r.signatures)
	if ok {
		return Block{}, false
	}
	if r.message != "" && !inconclusive {
		reason = r.message + ": " + reason
	}
	b := p.block(r, reason)
	b.Inconclusive = inconclusive
	b.Hold = b.Hold || inconclusive
	return b, true
}

func (k *Checker) run(program *vm.Program) (bool, error) {
	out, err := k.machine.Run(program, &k.env)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("expression returned %T, not a boolean", out)
	}
	return b, nil
}

func (c *Compiled) block(r *rule, reason string) Block {
	return Block{Policy: c.Name, Rule: r.name, Reason: reason, AllowBreakGlass: r.allowBreakGlass, Hold: c.Hold}
}
