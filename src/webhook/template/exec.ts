// Executes a parsed template, following text/template/exec.go: how dot, variables, fields,
// pipelines, function arguments and control structures are evaluated, and Go's messages,
// "template: NAME:LINE:COL: executing "NAME" at <node>: message".
import { FuncError, type ParamKind, type TemplateFunction } from "./builtins.js";
import { TemplateError } from "./error.js";
import { UnsupportedFormat, quote, sprint } from "./fmt.js";
import {
  nodeString,
  type ArgNode,
  type ControlNode,
  type CommandNode,
  type ListNode,
  type Node,
  type PipeNode,
  type TemplateNode,
  type VariableNode,
} from "./parse.js";
import { isMap, isTrue, sortedKeys, typeName, type GoValue } from "./value.js";

/** A pipeline stage with no value from a previous stage (Go's missingVal). */
const MISSING = Symbol("missing");
type Final = GoValue | typeof MISSING;

/** Go allows 100000 nested {{template}} calls; JavaScript's stack allows fewer. */
const MAX_TEMPLATE_DEPTH = 1000;

const BREAK = Symbol("break");
const CONTINUE = Symbol("continue");

type AnyNode = Node | ArgNode | CommandNode;

export class Executor {
  private out = "";
  private node: AnyNode | null = null;
  private vars: { name: string; value: GoValue }[];
  /** The template being executed: the file's name, or a {{define}}d template's. */
  private tmplName: string;
  private depth = 0;

  constructor(
    private readonly text: string,
    /** The file's name, used for positions. */
    private readonly name: string,
    private readonly templates: Map<string, ListNode>,
    private readonly funcs: Record<string, TemplateFunction>,
    private readonly data: GoValue,
  ) {
    this.vars = [{ name: "$", value: data }];
    this.tmplName = name;
  }

  run(): string {
    this.walk(this.data, this.templates.get(this.name)!);
    return this.out;
  }

  private at(node: AnyNode): void {
    this.node = node;
  }

  private errorf(message: string): never {
    const node = this.node;
    if (node === null) throw new TemplateError(`template: ${this.name}: ${message}`, this.name, 0);
    const before = this.text.slice(0, node.pos);
    const lineStart = before.lastIndexOf("\n") + 1;
    const line = before.split("\n").length;
    const col = Buffer.byteLength(before.slice(lineStart), "utf8");
    let context = nodeString(node);
    if (Buffer.byteLength(context, "utf8") > 20) context = `${[...context].slice(0, 20).join("")}...`;
    throw new TemplateError(`template: ${this.name}:${line}:${col}: executing ${quote(this.tmplName)} at <${context}>: ${message}`, this.name, line);
  }

  private walk(dot: GoValue, node: Node): void {
    this.at(node);
    switch (node.type) {
      case "action": {
        const value = this.evalPipeline(dot, node.pipe);
        if (node.pipe.decl.length === 0) {
          this.at(node);
          this.out += value === undefined || value === null ? "<no value>" : sprint([value]);
        }
        return;
      }
      case "if":
      case "with": {
        const mark = this.vars.length;
        try {
          const value = this.evalPipeline(dot, node.pipe);
          if (isTrue(value)) this.walk(node.type === "with" ? value : dot, node.list);
          else if (node.elseList) this.walk(dot, node.elseList);
        } finally {
          this.vars.length = mark;
        }
        return;
      }
      case "range":
        this.walkRange(dot, node);
        return;
      case "list":
        for (const n of node.nodes) this.walk(dot, n);
        return;
      case "text":
        this.out += node.text;
        return;
      case "template":
        this.walkTemplate(dot, node);
        return;
      case "break":
        throw BREAK;
      case "continue":
        throw CONTINUE;
    }
  }

  private walkRange(dot: GoValue, r: ControlNode): void {
    const outerMark = this.vars.length;
    try {
      const value = this.evalPipeline(dot, r.pipe);
      const mark = this.vars.length;
      const decl = r.pipe.decl;
      const oneIteration = (index: GoValue, elem: GoValue): void => {
        if (decl.length > 0) {
          if (r.pipe.isAssign) this.setVar(decl[0]!.ident[0]!, decl.length > 1 ? index : elem);
          else this.vars[this.vars.length - 1]!.value = elem;
        }
        if (decl.length > 1) {
          if (r.pipe.isAssign) this.setVar(decl[1]!.ident[0]!, elem);
          else this.vars[this.vars.length - 2]!.value = index;
        }
        try {
          this.walk(elem, r.list);
        } catch (e) {
          if (e !== CONTINUE) throw e;
        } finally {
          this.vars.length = mark;
        }
      };
      try {
        if (Array.isArray(value)) {
          if (value.length > 0) {
            for (const [i, elem] of value.entries()) oneIteration(BigInt(i), elem);
            return;
          }
        } else if (typeof value === "bigint") {
          if (decl.length > 1) this.errorf(`can't use ${value} to iterate over more than one variable`);
          if (value > 0n) {
            for (let i = 0n; i < value; i++) oneIteration(i, i);
            return;
          }
        } else if (isMap(value)) {
          const keys = sortedKeys(value);
          if (keys.length > 0) {
            for (const k of keys) oneIteration(k, value[k]);
            return;
          }
        } else if (value !== undefined && value !== null) {
          // Go prints the value here; a string may be a secret, so only its type is named.
          this.errorf(`range can't iterate over ${typeof value === "string" ? "a string" : sprint([value])}`);
        }
      } catch (e) {
        if (e === BREAK) return;
        throw e;
      }
      if (r.elseList) this.walk(dot, r.elseList);
    } finally {
      this.vars.length = outerMark;
    }
  }

  private walkTemplate(dot: GoValue, t: TemplateNode): void {
    this.at(t);
    const tmpl = this.templates.get(t.name);
    if (tmpl === undefined) this.errorf(`template ${quote(t.name)} not defined`);
    if (this.depth === MAX_TEMPLATE_DEPTH) this.errorf(`exceeded maximum template depth (${MAX_TEMPLATE_DEPTH})`);
    // Variables declared by the pipeline persist in the caller.
    const value = t.pipe ? this.evalPipeline(dot, t.pipe) : undefined;
    const saved = { vars: this.vars, tmplName: this.tmplName };
    // No dynamic scoping: the template sees only $, its dot.
    this.vars = [{ name: "$", value }];
    this.tmplName = t.name;
    this.depth++;
    try {
      this.walk(value, tmpl);
    } finally {
      this.depth--;
      this.vars = saved.vars;
      this.tmplName = saved.tmplName;
    }
  }

  private evalPipeline(dot: GoValue, pipe: PipeNode): GoValue {
    this.at(pipe);
    let value: Final = MISSING;
    for (const cmd of pipe.cmds) {
      value = this.evalCommand(dot, cmd, value);
      if (value === null) value = undefined; // a nil interface has no value
    }
    const result = value === MISSING ? undefined : value;
    for (const v of pipe.decl) {
      if (pipe.isAssign) this.setVar(v.ident[0]!, result);
      else this.vars.push({ name: v.ident[0]!, value: result });
    }
    return result;
  }

  private evalCommand(dot: GoValue, cmd: CommandNode, final: Final): GoValue {
    const first = cmd.args[0]!;
    switch (first.type) {
      case "field":
        return this.evalFieldNode(dot, first, cmd.args, final);
      case "chain":
        return this.evalChainNode(dot, first, cmd.args, final);
      case "identifier":
        return this.evalFunction(dot, first, cmd, cmd.args, final);
      case "pipe":
        this.notAFunction(cmd.args, final);
        return this.evalPipeline(dot, first);
      case "variable":
        return this.evalVariableNode(first, cmd.args, final);
    }
    this.at(first);
    this.notAFunction(cmd.args, final);
    switch (first.type) {
      case "bool":
        return first.value;
      case "dot":
        return dot;
      case "nil":
        return this.errorf("nil is not a command");
      case "number":
        return this.idealConstant(first);
      case "string":
        return first.text;
    }
  }

  private notAFunction(args: ArgNode[], final: Final): void {
    if (args.length > 1 || final !== MISSING) this.errorf(`can't give argument to non-function ${nodeString(args[0]!)}`);
  }

  private idealConstant(n: Extract<ArgNode, { type: "number" }>): GoValue {
    this.at(n);
    const v = n.value;
    const isHexInt = /^0[xX]/.test(n.text) && !/[pP]/.test(n.text);
    if (v.isFloat && !isHexInt && !v.isRune && /[.eEpP]/.test(n.text)) return v.float;
    if (v.isInt) return v.int;
    this.errorf(`${n.text} overflows int`);
  }

  private evalFieldNode(dot: GoValue, field: Extract<ArgNode, { type: "field" }>, args: ArgNode[], final: Final): GoValue {
    this.at(field);
    return this.evalFieldChain(dot, field.ident, args, final);
  }

  private evalChainNode(dot: GoValue, chain: Extract<ArgNode, { type: "chain" }>, args: ArgNode[], final: Final): GoValue {
    this.at(chain);
    if (chain.node.type === "nil") this.errorf(`indirection through explicit nil in ${nodeString(chain)}`);
    const receiver = this.evalArg(dot, null, chain.node);
    return this.evalFieldChain(receiver, chain.field, args, final);
  }

  private evalVariableNode(v: VariableNode, args: ArgNode[], final: Final): GoValue {
    this.at(v);
    const value = this.varValue(v.ident[0]!);
    if (v.ident.length === 1) {
      this.notAFunction(args, final);
      return value;
    }
    return this.evalFieldChain(value, v.ident.slice(1), args, final);
  }

  private evalFieldChain(receiver: GoValue, ident: string[], args: ArgNode[], final: Final): GoValue {
    for (let i = 0; i < ident.length - 1; i++) receiver = this.evalField(ident[i]!, [], MISSING, receiver, i > 0);
    return this.evalField(ident[ident.length - 1]!, args, final, receiver, ident.length > 1);
  }

  /** A field of a map; `fromMap` means the receiver is a map element (Go's interface {}). */
  private evalField(fieldName: string, args: ArgNode[], final: Final, receiver: GoValue, fromMap: boolean): GoValue {
    if (receiver === undefined) return undefined;
    if (receiver === null) this.errorf(`nil pointer evaluating interface {}.${fieldName}`);
    if (isMap(receiver)) {
      if (args.length > 1 || final !== MISSING) this.errorf(`${fieldName} is not a method but has arguments`);
      return Object.hasOwn(receiver, fieldName) ? receiver[fieldName] : undefined;
    }
    this.errorf(`can't evaluate field ${fieldName} in type ${fromMap ? "interface {}" : typeName(receiver)}`);
  }

  private evalFunction(dot: GoValue, node: Extract<ArgNode, { type: "identifier" }>, cmd: AnyNode, args: ArgNode[] | null, final: Final): GoValue {
    this.at(node);
    // The parser has checked that the function exists.
    return this.evalCall(dot, this.funcs[node.ident]!, cmd, node.ident, args, final);
  }

  private evalCall(dot: GoValue, fn: TemplateFunction, node: AnyNode, name: string, allArgs: ArgNode[] | null, final: Final): GoValue {
    const args = allArgs ? allArgs.slice(1) : [];
    const numIn = args.length + (final === MISSING ? 0 : 1);
    let numFixed = args.length;
    if (fn.variadic) {
      numFixed = fn.params.length;
      if (numIn < numFixed) {
        this.errorf(`wrong number of args for ${name}: want at least ${fn.params.length} got ${args.length}`);
      }
    } else if (numIn !== fn.params.length) {
      this.errorf(`wrong number of args for ${name}: want ${fn.params.length} got ${numIn}`);
    }

    if (fn.builtin && (name === "and" || name === "or")) {
      let v: GoValue;
      for (const arg of args) {
        v = this.evalArg(dot, "value", arg);
        if (isTrue(v) === (name === "or")) return v;
      }
      if (final !== MISSING) v = this.validateType(final, "value");
      return v;
    }

    const argv: GoValue[] = [];
    let i = 0;
    for (; i < numFixed && i < args.length; i++) argv.push(this.evalArg(dot, fn.params[i]!, args[i]!));
    if (fn.variadic) for (; i < args.length; i++) argv.push(this.evalArg(dot, fn.variadic, args[i]!));
    if (final !== MISSING) {
      let kind = fn.params[fn.params.length - 1]!;
      if (fn.variadic) kind = numIn - 1 < numFixed ? fn.params[numIn - 1]! : fn.variadic;
      argv.push(this.validateType(final, kind));
    }
    try {
      return fn.call(argv);
    } catch (e) {
      if (e instanceof FuncError) {
        this.at(node);
        this.errorf(`error calling ${name}: ${e.message}`);
      }
      if (e instanceof UnsupportedFormat) {
        this.at(node);
        this.errorf(`error calling ${name}: ${e.message} is not supported by this server's template engine`);
      }
      throw e;
    }
  }

  /** Evaluates an argument for a parameter of the given kind (null: no conversion). */
  private evalArg(dot: GoValue, kind: ParamKind | null, n: ArgNode): GoValue {
    this.at(n);
    switch (n.type) {
      case "dot":
        return this.validateType(dot, kind);
      case "nil":
        if (kind === "string") this.errorf("cannot assign nil to string");
        return kind === "any" ? null : undefined;
      case "field":
        return this.validateType(this.evalFieldNode(dot, n, [n], MISSING), kind);
      case "variable":
        return this.validateType(this.evalVariableNode(n, [], MISSING), kind);
      case "pipe":
        return this.validateType(this.evalPipeline(dot, n), kind);
      case "identifier":
        return this.validateType(this.evalFunction(dot, n, n, null, MISSING), kind);
      case "chain":
        return this.validateType(this.evalChainNode(dot, n, [], MISSING), kind);
    }
    if (kind === "string") {
      if (n.type === "string") return n.text;
      this.errorf(`expected string; found ${nodeString(n)}`);
    }
    switch (n.type) {
      case "bool":
        return n.value;
      case "number":
        return this.idealConstant(n);
      case "string":
        return n.text;
    }
  }

  private validateType(value: GoValue, kind: ParamKind | null): GoValue {
    if (kind === null) return value;
    if (value === undefined) {
      if (kind === "string") this.errorf("invalid value; expected string");
      return kind === "any" ? null : undefined;
    }
    if (kind === "string" && typeof value !== "string") {
      this.errorf(`wrong type for value; expected string; got ${value === null ? "interface {}" : typeName(value)}`);
    }
    if (kind === "value" && value === null) return undefined;
    return value;
  }

  private varValue(name: string): GoValue {
    for (let i = this.vars.length - 1; i >= 0; i--) if (this.vars[i]!.name === name) return this.vars[i]!.value;
    this.errorf(`undefined variable: ${name}`);
  }

  private setVar(name: string, value: GoValue): void {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      if (this.vars[i]!.name === name) {
        this.vars[i]!.value = value;
        return;
      }
    }
    this.errorf(`undefined variable: ${name}`);
  }
}
