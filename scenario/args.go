package scenario

import (
	"fmt"
	"math"

	"golang.org/x/sys/unix"
)

// parseArgs reads "(ARG, ...)" and checks it against the call's shape.
func (p *parser) parseArgs(st *stmt, spec CallSpec) *Error {
	if _, err := p.expect(tLParen); err != nil {
		return err
	}
	var args []arg
	for p.tok.kind != tRParen {
		if len(args) > 0 {
			if _, err := p.expect(tComma); err != nil {
				return err
			}
		}
		a, err := p.parseArg()
		if err != nil {
			return err
		}
		args = append(args, a)
	}
	for i, a := range args {
		if m := spec.maxArgs(); m >= 0 && i >= m {
			return &Error{File: p.file, Line: a.pos.Line, Col: a.pos.Col,
				Msg: fmt.Sprintf("%s takes %s, got %d", st.call, spec.arity(), len(args))}
		}
		if err := p.checkArg(st.call, i, spec.Kind(i), a); err != nil {
			return err
		}
	}
	if !spec.Allows(len(args)) {
		return p.errAt(p.tok, "%s takes %s, got %d", st.call, spec.arity(), len(args))
	}
	if err := p.checkIDs(st.call, spec, args); err != nil {
		return err
	}
	if spec.Rest != nil && *spec.Rest == ArgSembuf {
		merged := args[len(spec.Args)]
		for _, a := range args[len(spec.Args)+1:] {
			merged.sembufs = append(merged.sembufs, a.sembufs...)
		}
		args = append(args[:len(spec.Args)], merged)
	}
	st.args = args
	return p.advance()
}

// checkArg checks that argument i of call, a, has a form that position kind accepts and that
// a name in it is bound to the right kind of thing.
func (p *parser) checkArg(call string, i int, kind ArgKind, a arg) *Error {
	fail := func(what string) *Error {
		return &Error{File: p.file, Line: a.pos.Line, Col: a.pos.Col,
			Msg: fmt.Sprintf("argument %d of %s must be %s, not %s", i+1, call, kind, what)}
	}
	switch a.form {
	case formSembufs:
		if kind != ArgSembuf {
			return fail("a sembuf")
		}
	case formList:
		if kind != ArgSemArg && kind != ArgSigset {
			return fail("a value list")
		}
		if kind == ArgSigset {
			for _, v := range a.list {
				if v < 1 || v > 64 {
					return fail(fmt.Sprintf("a list holding %d, which is no signal", v))
				}
			}
		}
	case formInt:
		if kind == ArgSembuf || kind == ArgSigset || kind == ArgFD {
			return fail("an integer")
		}
	case formName:
		b, ok := p.names[a.name]
		if !ok {
			return &Error{File: p.file, Line: a.pos.Line, Col: a.pos.Col,
				Msg: fmt.Sprintf("unknown constant or unbound name %s%s", echo(a.name), p.untilJoin(a.name))}
		}
		neg := ""
		if a.neg {
			neg = "-"
		}
		switch {
		case b.creates == createsTask && kind != ArgPid && kind != ArgID:
			return fail("task " + neg + echo(a.name))
		case b.creates == createsSet && (kind != ArgSet || a.neg):
			return fail("semaphore set " + neg + echo(a.name))
		case b.creates == createsFile && (kind != ArgFD && kind != ArgID || a.neg):
			return fail("pidfd " + neg + echo(a.name))
		}
	}
	return nil
}

// checkIDs checks each waitid id (ArgID) against the idtype before it: a pidfd's name after
// P_PIDFD and nowhere else, since a descriptor number is the runner's own.
func (p *parser) checkIDs(call string, spec CallSpec, args []arg) *Error {
	for i, a := range args {
		if i == 0 || i >= len(spec.Args) || spec.Args[i] != ArgID {
			continue
		}
		byPidfd := int32(args[i-1].val) == unix.P_PIDFD
		isFile := a.form == formName && p.names[a.name].creates == createsFile
		switch {
		case byPidfd && !isFile:
			return &Error{File: p.file, Line: a.pos.Line, Col: a.pos.Col,
				Msg: fmt.Sprintf("argument %d of %s must be a pidfd after P_PIDFD", i+1, call)}
		case !byPidfd && isFile:
			return &Error{File: p.file, Line: a.pos.Line, Col: a.pos.Col,
				Msg: fmt.Sprintf("argument %d of %s may be a pidfd only after P_PIDFD", i+1, call)}
		}
	}
	return nil
}

func (p *parser) parseArg() (arg, *Error) {
	t := p.tok
	a := arg{pos: p.pos(t)}
	switch t.kind {
	case tLBrace:
		return p.parseSembuf(a)
	case tLBrack:
		return p.parseList(a)
	case tMinus, tIdent:
		n := t
		if t.kind == tMinus {
			var err *Error
			if n, err = p.peek(); err != nil {
				return a, err
			}
		}
		if _, isConst := constants[n.text]; n.kind == tIdent && !isConst {
			a.form, a.name, a.neg = formName, n.text, t.kind == tMinus
			if t.kind == tMinus {
				if err := p.advance(); err != nil {
					return a, err
				}
			}
			if err := p.advance(); err != nil {
				return a, err
			}
			if p.tok.kind == tPipe {
				return a, p.errAt(n, "%s", p.notConstant(n.text))
			}
			return a, nil
		}
	}
	v, err := p.parseExpr()
	a.form, a.val = formInt, v
	return a, err
}

// notConstant explains why a name cannot stand where only constants may.
func (p *parser) notConstant(name string) string {
	if _, ok := p.names[name]; ok {
		return echo(name) + " is a name, not a constant; only constants combine with |"
	}
	return "unknown constant or unbound name " + echo(name) + p.untilJoin(name)
}

// parseExpr reads TERM { | TERM }.
func (p *parser) parseExpr() (int64, *Error) {
	v, err := p.parseTerm()
	for err == nil && p.tok.kind == tPipe {
		if err = p.advance(); err != nil {
			break
		}
		var w int64
		w, err = p.parseTerm()
		v |= w
	}
	return v, err
}

// parseTerm reads a number, a negative number or a constant.
func (p *parser) parseTerm() (int64, *Error) {
	sign := p.tok
	neg := sign.kind == tMinus
	if neg {
		if err := p.advance(); err != nil {
			return 0, err
		}
	}
	t := p.tok
	switch t.kind {
	case tInt:
		var v int64
		switch {
		case neg && t.num <= 1<<63:
			v = int64(-t.num) // two's complement, so 1<<63 becomes math.MinInt64
		case !neg && t.num <= math.MaxInt64:
			v = int64(t.num)
		case neg:
			return 0, p.errAt(sign, "number -%s out of range", echo(t.text))
		default:
			return 0, p.errAt(t, "number %s out of range", echo(t.text))
		}
		return v, p.advance()
	case tIdent:
		v, ok := constants[t.text]
		if !ok {
			return 0, p.errAt(t, "%s", p.notConstant(t.text))
		}
		if neg {
			return 0, p.errAt(sign, "cannot negate constant %s", t.text)
		}
		return v, p.advance()
	}
	return 0, p.errAt(t, "expected a number or constant, found %s", t)
}

// parseSembuf reads {NUM, OP, FLAGS}.
func (p *parser) parseSembuf(a arg) (arg, *Error) {
	open := p.tok
	if err := p.advance(); err != nil {
		return a, err
	}
	var f []int64
	for p.tok.kind != tRBrace {
		if len(f) > 0 {
			if _, err := p.expect(tComma); err != nil {
				return a, err
			}
		}
		v, err := p.parseExpr()
		if err != nil {
			return a, err
		}
		f = append(f, v)
	}
	if len(f) != 3 {
		return a, p.errAt(open, "malformed sembuf: it has %d fields, not 3 {NUM, OP, FLAGS}", len(f))
	}
	a.form, a.sembufs = formSembufs, []Sembuf{{Num: f[0], Op: f[1], Flags: f[2]}}
	return a, p.advance()
}

// parseList reads [v0 v1 ...]; commas between values are tolerated.
func (p *parser) parseList(a arg) (arg, *Error) {
	if err := p.advance(); err != nil {
		return a, err
	}
	a.form, a.list = formList, []int64{}
	for p.tok.kind != tRBrack {
		if len(a.list) > 0 && p.tok.kind == tComma {
			if err := p.advance(); err != nil {
				return a, err
			}
		}
		v, err := p.parseExpr()
		if err != nil {
			return a, err
		}
		a.list = append(a.list, v)
	}
	return a, p.advance()
}
