// Package mdshell extracts the shell commands of a Markdown document: the
// fenced code blocks tagged sh, bash, shell or console, each command with
// the line it starts on and the section heading above it, so a test can
// run the commands a document tells its readers to type. It does no I/O.
package mdshell

import (
	"bufio"
	"bytes"
	"strings"
)

// shellLangs are the info strings of the blocks that hold shell commands.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// Block is one fenced shell block.
type Block struct {
	// Heading is the text of the nearest heading above the block.
	Heading string
	// Line is the 1-based line of the opening fence.
	Line int
	// Commands are the block's commands, in order.
	Commands []Command
}

// Command is one command of a block: its lines joined where a line ends in
// a backslash, without a console prompt. A trailing comment stays: the
// shell drops it.
type Command struct {
	// Line is the 1-based line the command starts on.
	Line int
	// Text is the command as the shell reads it.
	Text string
}

// Blocks returns the shell blocks of a Markdown document. Lines holding
// only a comment are not commands.
func Blocks(md []byte) []Block {
	var (
		out     []Block
		heading string
		cur     *Block
		fence   string
		pending strings.Builder
		start   int
	)
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if fence == "" {
			if f, lang, ok := openFence(trimmed); ok {
				fence = f
				if shellLangs[lang] {
					cur = &Block{Heading: heading, Line: n}
				}
				continue
			}
			if strings.HasPrefix(trimmed, "#") {
				heading = strings.TrimSpace(strings.TrimLeft(trimmed, "#"))
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
			if cur != nil {
				if pending.Len() > 0 {
					cur.Commands = append(cur.Commands, Command{Line: start, Text: pending.String()})
					pending.Reset()
				}
				out = append(out, *cur)
			}
			cur, fence = nil, ""
			continue
		}
		if cur == nil {
			continue
		}
		if pending.Len() == 0 {
			trimmed = strings.TrimPrefix(trimmed, "$ ")
			if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				continue
			}
			start = n
		} else {
			pending.WriteByte(' ')
		}
		if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
			pending.WriteString(strings.TrimSpace(cont))
			continue
		}
		pending.WriteString(trimmed)
		cur.Commands = append(cur.Commands, Command{Line: start, Text: pending.String()})
		pending.Reset()
	}
	return out
}

// openFence reports whether line opens a fenced block, with its fence
// (``` or ~~~, or longer) and its info string's first word.
func openFence(line string) (fence, lang string, ok bool) {
	for _, c := range []string{"`", "~"} {
		if !strings.HasPrefix(line, c+c+c) {
			continue
		}
		i := 0
		for i < len(line) && line[i] == c[0] {
			i++
		}
		info := strings.Fields(line[i:])
		if len(info) > 0 {
			lang = strings.ToLower(info[0])
		}
		return line[:i], lang, true
	}
	return "", "", false
}
