package scenario

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Error is a problem in a scenario file, at the token that shows it.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

// Error returns the error as FILE:LINE:COL: message, the form editors jump to.
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Script is a parsed scenario file, ready to [Run].
type Script struct {
	file  string
	stmts []*stmt
}

// stmt is one statement: a call, or a join when join is set.
type stmt struct {
	line       int
	source     string // what the output line shows: the text before == or a comment, trimmed
	join       bool
	bind       string // the NAME of "NAME =", or ""
	bindFile   string // the FILE of "NAME, FILE =": the pidfd of a clone with CLONE_PIDFD
	actor      string
	actorPos   Position
	call       string
	callPos    Position
	args       []arg
	background bool
	expect     string // "" when the statement has no == part
	creates    creates
	issued     *stmt // for a join: the background call it waits for
}

// argForm is the syntactic form of an argument; positions decide which forms they accept.
type argForm int

const (
	formInt     argForm = iota // an integer or constant expression
	formName                   // NAME or -NAME
	formSembufs                // one or more sembufs
	formList                   // [v0 v1 ...]
)

type arg struct {
	form    argForm
	pos     Position
	val     int64
	name    string
	neg     bool
	sembufs []Sembuf
	list    []int64
}

// binding is what the parser knows about a name: what it names and where it was bound.
type binding struct {
	creates creates
	line    int
}

// parser checks every line against the names bound by the lines before it. pending holds each
// actor's background call until its join; a name such a call binds is in later until then.
type parser struct {
	file string
	lx   *lexer
	tok  token
	// ahead is the token after tok when peeked is set, and aheadErr the error lexing it gave.
	ahead    token
	aheadErr *Error
	peeked   bool
	names    map[string]binding
	pending  map[string]*stmt
	later    map[string]string // a name a background call will bind -> its actor
}

// Parse reads a scenario and refuses, before anything runs, every error that shows without
// running it: a syntax error, an unknown call or constant, a malformed number, sembuf or list, a
// call with the wrong number or kinds of arguments, an actor or argument name that is not bound,
// a name bound twice or bound to a call that creates nothing, a join with nothing in the
// background, and a call by an actor whose background call has not been joined. The error is an
// *Error at the first such problem.
func Parse(filename string, src []byte) (*Script, error) {
	p := &parser{
		file:    filename,
		names:   map[string]binding{"init": {creates: createsTask}},
		pending: map[string]*stmt{},
		later:   map[string]string{},
	}
	s := &Script{file: filename}
	// A byte-order mark some editors write at the start of a UTF-8 file is no part of line 1.
	text := strings.TrimPrefix(string(src), byteOrderMark)
	for i, line := range strings.Split(text, "\n") {
		st, err := p.parseLine(i+1, strings.TrimSuffix(line, "\r"))
		if err != nil {
			return nil, err
		}
		if st != nil {
			s.stmts = append(s.stmts, st)
		}
	}
	return s, nil
}

// byteOrderMark is U+FEFF encoded in UTF-8.
const byteOrderMark = "\uFEFF"

func (p *parser) pos(t token) Position {
	return Position{File: p.file, Line: p.lx.line, Col: t.col}
}

func (p *parser) errAt(t token, format string, args ...any) *Error {
	return p.lx.errAt(t.col, format, args...)
}

// advance moves to the next token; the error is the lexer's for text that forms none.
func (p *parser) advance() *Error {
	if p.peeked {
		p.peeked = false
		p.tok = p.ahead
		return p.aheadErr
	}
	t, err := p.lx.next()
	p.tok = t
	return err
}

// peek returns the token after the current one without consuming it, or the lexer's error for
// the text there: that text must be read whatever the current token turns out to be, so its
// error is the first one on the line.
func (p *parser) peek() (token, *Error) {
	if !p.peeked {
		p.ahead, p.aheadErr = p.lx.next()
		p.peeked = true
	}
	return p.ahead, p.aheadErr
}

func (p *parser) expect(k tokKind) (token, *Error) {
	t := p.tok
	if t.kind != k {
		return t, p.errAt(t, "expected %s, found %s", tokNames[k], t)
	}
	return t, p.advance()
}

func (p *parser) parseLine(line int, src string) (*stmt, *Error) {
	p.lx = newLexer(p.file, line, src)
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tEOL {
		return nil, nil
	}
	st := &stmt{line: line}
	isJoin := false
	if p.tok.kind == tIdent && p.tok.text == "join" {
		next, err := p.peek()
		if err != nil {
			return nil, err
		}
		isJoin = next.kind != tDot && next.kind != tAssign
	}
	var err *Error
	if isJoin {
		err = p.parseJoin(st)
	} else {
		err = p.parseCall(st)
	}
	if err != nil {
		return nil, err
	}
	end := p.tok
	if end.kind == tExpect {
		st.expect = end.text
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	if p.tok.kind != tEOL {
		return nil, p.errAt(p.tok, "expected end of line, found %s", p.tok)
	}
	st.source = strings.TrimSpace(src[:end.off])
	return st, nil
}

func (p *parser) parseJoin(st *stmt) *Error {
	st.join = true
	if err := p.advance(); err != nil {
		return err
	}
	t := p.tok
	if err := p.checkActor(t); err != nil {
		return err
	}
	issued := p.pending[t.text]
	if issued == nil {
		return p.errAt(t, "join %s: nothing in the background", echo(t.text))
	}
	st.actor, st.actorPos, st.issued = t.text, p.pos(t), issued
	delete(p.pending, t.text)
	if issued.bind != "" {
		delete(p.later, issued.bind)
		p.names[issued.bind] = binding{creates: issued.creates, line: issued.line}
	}
	if issued.bindFile != "" {
		delete(p.later, issued.bindFile)
		p.names[issued.bindFile] = binding{creates: createsFile, line: issued.line}
	}
	return p.advance()
}

// checkActor checks that t names a task that may act now.
func (p *parser) checkActor(t token) *Error {
	if t.kind != tIdent {
		return p.errAt(t, "expected a task name, found %s", t)
	}
	if b, ok := p.names[t.text]; ok {
		switch b.creates {
		case createsSet:
			return p.errAt(t, "%s is a semaphore set, not a task", echo(t.text))
		case createsFile:
			return p.errAt(t, "%s is a pidfd, not a task", echo(t.text))
		}
		return nil
	}
	if _, ok := constants[t.text]; ok {
		return p.errAt(t, "%s is a constant, not a task", t.text)
	}
	return p.errAt(t, "actor %s is not bound%s", echo(t.text), p.untilJoin(t.text))
}

// untilJoin explains why a name a background call binds cannot be used yet.
func (p *parser) untilJoin(name string) string {
	if actor, ok := p.later[name]; ok {
		return " before join " + echo(actor)
	}
	return ""
}

func (p *parser) parseCall(st *stmt) *Error {
	if p.tok.kind == tIdent {
		next, err := p.peek()
		if err != nil {
			return err
		}
		if next.kind == tAssign || next.kind == tComma {
			if err := p.parseBinding(st); err != nil {
				return err
			}
		}
	}
	actor := p.tok
	if err := p.checkActor(actor); err != nil {
		return err
	}
	if prev := p.pending[actor.text]; prev != nil {
		return p.errAt(actor, "%s has a call in the background since line %d; join %s first",
			echo(actor.text), prev.line, echo(actor.text))
	}
	st.actor, st.actorPos = actor.text, p.pos(actor)
	if err := p.advance(); err != nil {
		return err
	}
	if _, err := p.expect(tDot); err != nil {
		return err
	}
	name := p.tok
	if name.kind != tIdent {
		return p.errAt(name, "expected a call name, found %s", name)
	}
	spec, ok := calls[name.text]
	if !ok {
		return p.errAt(name, "unknown call %s", echo(name.text))
	}
	st.call, st.callPos, st.creates = name.text, p.pos(name), spec.creates()
	if st.bind != "" && spec.creates() == createsNothing {
		return p.errAt(name, "%s creates nothing to bind to %s; only fork, vfork, clone, clone3, semget and pidfd_open do",
			name.text, echo(st.bind))
	}
	if st.bindFile != "" && !spec.ClonesPidfd {
		return p.errAt(name, "%s opens no pidfd to bind to %s; only clone and clone3 with CLONE_PIDFD do",
			name.text, echo(st.bindFile))
	}
	if err := p.advance(); err != nil {
		return err
	}
	if err := p.parseArgs(st, spec); err != nil {
		return err
	}
	if spec.ClonesPidfd && st.args[0].val&unix.CLONE_INTO_CGROUP != 0 {
		return &Error{File: p.file, Line: st.args[0].pos.Line, Col: st.args[0].pos.Col,
			Msg: fmt.Sprintf("%s: CLONE_INTO_CGROUP takes a cgroup descriptor, which the language cannot name", st.call)}
	}
	if st.bindFile != "" && st.args[0].val&unix.CLONE_PIDFD == 0 {
		return &Error{File: p.file, Line: st.args[0].pos.Line, Col: st.args[0].pos.Col,
			Msg: fmt.Sprintf("%s opens no pidfd to bind to %s without CLONE_PIDFD", st.call, echo(st.bindFile))}
	}
	if p.tok.kind == tAmp {
		st.background = true
		p.pending[st.actor] = st
		p.bindLater(st)
		return p.advance()
	}
	p.bind(st)
	return nil
}

// bind makes the names st binds known from the next line on.
func (p *parser) bind(st *stmt) {
	if st.bind != "" {
		p.names[st.bind] = binding{creates: st.creates, line: st.line}
	}
	if st.bindFile != "" {
		p.names[st.bindFile] = binding{creates: createsFile, line: st.line}
	}
}

// bindLater makes the names a background call binds known: a task's at once, since the task
// may be named as soon as it exists (a vfork child, while its parent waits), the others at
// the call's join.
func (p *parser) bindLater(st *stmt) {
	if st.bind != "" && st.creates == createsTask {
		p.names[st.bind] = binding{creates: createsTask, line: st.line}
	} else if st.bind != "" {
		p.later[st.bind] = st.actor
	}
	if st.bindFile != "" {
		p.later[st.bindFile] = st.actor
	}
}

// parseBinding reads "NAME =" or "NAME, FILE =" into st.
func (p *parser) parseBinding(st *stmt) *Error {
	if err := p.checkBindable(p.tok); err != nil {
		return err
	}
	st.bind = p.tok.text
	if err := p.advance(); err != nil {
		return err
	}
	if p.tok.kind == tComma {
		if err := p.advance(); err != nil {
			return err
		}
		t := p.tok
		if t.kind != tIdent {
			return p.errAt(t, "expected a name for the pidfd, found %s", t)
		}
		if err := p.checkBindable(t); err != nil {
			return err
		}
		if t.text == st.bind {
			return p.errAt(t, "%s is bound twice on this line", echo(t.text))
		}
		st.bindFile = t.text
		if err := p.advance(); err != nil {
			return err
		}
		_, err := p.expect(tAssign)
		return err
	}
	return p.advance()
}

// checkBindable checks that "NAME =" may bind t's name.
func (p *parser) checkBindable(t token) *Error {
	switch {
	case t.text == "init":
		return p.errAt(t, "init is predefined and cannot be rebound")
	case t.text == "join":
		return p.errAt(t, "join is a keyword and cannot be bound")
	}
	if _, ok := constants[t.text]; ok {
		return p.errAt(t, "%s is a constant and cannot be bound", echo(t.text))
	}
	if b, ok := p.names[t.text]; ok {
		return p.errAt(t, "%s is already bound on line %d", echo(t.text), b.line)
	}
	if actor, ok := p.later[t.text]; ok {
		return p.errAt(t, "%s is already bound by the background call of %s on line %d",
			echo(t.text), echo(actor), p.pending[actor].line)
	}
	return nil
}
