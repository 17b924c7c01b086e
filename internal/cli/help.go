package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mitchellh/go-wordwrap"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpWidth is the width help is laid out for: a terminal's usual 80
// columns, so no help line wraps in the middle of a word.
const helpWidth = 80

// helpGroupAnnotation names the section of help a flag is listed in, apart
// from the verb's own flags.
const helpGroupAnnotation = "kargo-fleet.io/help-group"

// Help sections besides the verb's own flags, in the order help lists them.
const (
	outputFlags     = "Output flags"
	connectionFlags = "Connection flags (kubectl's)"
)

// groupFlags lists the named flags of fs (all of them when none is named)
// in the given help section.
func groupFlags(fs *pflag.FlagSet, section string, names ...string) {
	fs.VisitAll(func(f *pflag.Flag) {
		if len(names) > 0 && !slices.Contains(names, f.Name) {
			return
		}
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[helpGroupAnnotation] = []string{section}
	})
}

// formatHelp wraps every command's long description to helpWidth and makes
// usage list the verb's flags first and kubectl's connection flags after
// them, both wrapped to helpWidth.
func formatHelp(root *cobra.Command) {
	root.SetUsageFunc(writeUsage)
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Long = wrapParagraphs(c.Long, helpWidth)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// writeUsage writes a command's usage: use line, examples, sub-commands,
// its own flags, then the connection flags.
func writeUsage(c *cobra.Command) error {
	w := c.OutOrStderr()
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() {
		fmt.Fprintf(&b, "\n  %s", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n  %s [command]", c.CommandPath())
	}
	if c.HasExample() {
		fmt.Fprintf(&b, "\n\nExamples:\n%s", c.Example)
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	own := pflag.NewFlagSet("own", pflag.ContinueOnError)
	groups := map[string]*pflag.FlagSet{outputFlags: pflag.NewFlagSet(outputFlags, pflag.ContinueOnError),
		connectionFlags: pflag.NewFlagSet(connectionFlags, pflag.ContinueOnError)}
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if g := f.Annotations[helpGroupAnnotation]; len(g) == 1 && groups[g[0]] != nil {
			groups[g[0]].AddFlag(f)
			return
		}
		own.AddFlag(f)
	})
	for _, section := range []struct {
		title string
		flags *pflag.FlagSet
	}{{"Flags", own}, {outputFlags, groups[outputFlags]}, {connectionFlags, groups[connectionFlags]},
		{"Global Flags", c.InheritedFlags()}} {
		if section.flags.HasAvailableFlags() {
			fmt.Fprintf(&b, "\n\n%s:\n%s", section.title, strings.TrimRight(section.flags.FlagUsagesWrapped(helpWidth), " \n"))
		}
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// wrapParagraphs wraps each paragraph of s to width columns. Lines that
// start with a space (examples, lists) are kept as they are.
func wrapParagraphs(s string, width int) string {
	if s == "" {
		return s
	}
	paragraphs := strings.Split(s, "\n\n")
	for i, p := range paragraphs {
		if strings.HasPrefix(p, " ") || strings.Contains(p, "\n ") {
			continue
		}
		paragraphs[i] = wordwrap.WrapString(strings.Join(strings.Fields(p), " "), uint(width))
	}
	return strings.Join(paragraphs, "\n\n")
}
