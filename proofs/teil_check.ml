(* teil-check: the checker extracted from the Coq proof (Checker.v, check_prog), as a command.

   Reads programs from standard input, one JSON object per line, in the form that
   `teil check --ast-json` prints (teil-cli/src/check.rs), and writes one JSON line per
   program:
     {"decls":"E0101","rule":"S-Var"}            the declarations' first error
     {"stmts":[{"ok":[2,3],"elem":"f32"},{"err":"E0303","rule":"T-Red"}]}
                                                 each statement's type (the shape and element
                                                 type of its right-hand side, the target's), or
                                                 its first error and the rule (spec/typing.md)
                                                 whose premise it is
   A line that is not a program in that form gives {"invalid":"<reason>"}.

   With --core it writes instead each program's Core-TeIL form (Core.v, desugar_prog), in the
   form it reads. *)

open Teil_checker

exception Invalid of string

let invalid fmt = Printf.ksprintf (fun s -> raise (Invalid s)) fmt

let member k = function
  | `Assoc kv -> (try List.assoc k kv with Not_found -> invalid "missing key %s" k)
  | _ -> invalid "expected an object with key %s" k

let str = function `String s -> s | _ -> invalid "expected a string"

(* The extracted checker's naturals are Zarith's integers (Extract.v), so every number is read
   exactly: the AST's are u64, and above OCaml's max_int (2^62 - 1) Yojson gives them as
   `Intlit, their digits. *)
let digits s = s <> "" && String.for_all (fun c -> c >= '0' && c <= '9') s

let num = function
  | `Int n when n >= 0 -> Z.of_int n
  | `Intlit s when digits s -> Z.of_string s
  | _ -> invalid "expected a natural number"

(* The inverse of [num]: a natural as a JSON number, exactly. *)
let nat_json n : Yojson.Safe.t =
  if Z.fits_int n then `Int (Z.to_int n) else `Intlit (Z.to_string n)

let list f = function `List l -> List.map f l | _ -> invalid "expected a list"

let bool = function `Bool b -> b | _ -> invalid "expected a boolean"

let etype = function
  | `String "f64" -> F64
  | `String "f32" -> F32
  | _ -> invalid "unknown element type"

let etype_name = function F64 -> "f64" | F32 -> "f32"

let func_names = [ ("exp", FExp); ("log", FLog); ("sqrt", FSqrt); ("tanh", FTanh);
                   ("erf", FErf); ("abs", FAbs) ]

let func2_names = [ ("max", FMax); ("min", FMin) ]

let lookup_name what names j =
  let s = str j in
  try List.assoc s names with Not_found -> invalid "unknown %s %s" what s

let name_of names x = fst (List.find (fun (_, y) -> y = x) names)

let rec expr j =
  let e () = expr (member "e" j) in
  let n k = num (member k j) in
  match str (member "kind" j) with
  | "var" -> EVar (str (member "name" j))
  | "lit" -> ELit (str (member "value" j), bool (member "f32_finite" j))
  | "paren" -> EParen (e ())
  | "binary" ->
      let op =
        match str (member "op" j) with
        | "add" -> Add
        | "sub" -> Sub
        | "mul" -> Mul
        | "div" -> Div
        | o -> invalid "unknown operator %s" o
      in
      EBin (op, expr (member "l" j), expr (member "r" j))
  | "prod" -> EProd (expr (member "l" j), expr (member "r" j))
  | "reduce" ->
      let op =
        match str (member "op" j) with
        | "red+" -> RSum
        | "red*" -> RProd
        | "redmax" -> RMax
        | "redmin" -> RMin
        | o -> invalid "unknown reduction %s" o
      in
      ERed (op, n "i", e ())
  | "transp" -> ETransp (n "i", n "j", e ())
  | "diag" -> EDiag (n "i", n "j", e ())
  | "contr" -> EContr (n "i", n "j", e ())
  | "expa" -> EExpa (n "i", n "n", e ())
  | "proj" -> EProj (n "i", n "m", e ())
  | "func" -> EFunc (lookup_name "function" func_names (member "name" j), e ())
  | "func2" ->
      EFunc2 (lookup_name "function" func2_names (member "name" j), expr (member "l" j),
              expr (member "r" j))
  | "convert" -> EConv (etype (member "to" j), e ())
  | k -> invalid "unknown expression kind %s" k

let qualifier = function
  | `Null -> None
  | `String "input" -> Some Input
  | `String "output" -> Some Output
  | `String "inout" -> Some InOut
  | _ -> invalid "unknown qualifier"

let decl j =
  { dqual = qualifier (member "qualifier" j);
    dname = str (member "name" j);
    dshape = list num (member "shape" j);
    delem = etype (member "elem" j) }

let stmt j = { target = str (member "target" j); value = expr (member "value" j) }

let program j = { decls = list decl (member "decls" j); stmts = list stmt (member "stmts" j) }

let code = function
  | E0101 -> "E0101" | E0102 -> "E0102" | E0201 -> "E0201" | E0202 -> "E0202"
  | E0203 -> "E0203"
  | E0301 -> "E0301" | E0302 -> "E0302" | E0303 -> "E0303" | E0304 -> "E0304"
  | E0305 -> "E0305" | E0306 -> "E0306" | E0307 -> "E0307" | E0308 -> "E0308"
  | E0311 -> "E0311" | E0312 -> "E0312" | E0313 -> "E0313"

let rec expr_json (e : expr) : Yojson.Safe.t =
  let pair kind a x b y e = `Assoc [ ("kind", `String kind); (a, nat_json x); (b, nat_json y); ("e", expr_json e) ] in
  match e with
  | EVar x -> `Assoc [ ("kind", `String "var"); ("name", `String x) ]
  | ELit (c, fin) ->
      `Assoc [ ("kind", `String "lit"); ("value", `String c); ("f32_finite", `Bool fin) ]
  | EParen e -> `Assoc [ ("kind", `String "paren"); ("e", expr_json e) ]
  | EBin (o, a, b) ->
      let o = match o with Add -> "add" | Sub -> "sub" | Mul -> "mul" | Div -> "div" in
      `Assoc [ ("kind", `String "binary"); ("op", `String o); ("l", expr_json a); ("r", expr_json b) ]
  | EProd (a, b) -> `Assoc [ ("kind", `String "prod"); ("l", expr_json a); ("r", expr_json b) ]
  | ERed (o, i, e) ->
      let o = match o with RSum -> "red+" | RProd -> "red*" | RMax -> "redmax" | RMin -> "redmin" in
      `Assoc [ ("kind", `String "reduce"); ("op", `String o); ("i", nat_json i); ("e", expr_json e) ]
  | ETransp (i, j, e) -> pair "transp" "i" i "j" j e
  | EDiag (i, j, e) -> pair "diag" "i" i "j" j e
  | EContr (i, j, e) -> pair "contr" "i" i "j" j e
  | EExpa (i, n, e) -> pair "expa" "i" i "n" n e
  | EProj (i, m, e) -> pair "proj" "i" i "m" m e
  | EFunc (f, e) ->
      `Assoc [ ("kind", `String "func"); ("name", `String (name_of func_names f)); ("e", expr_json e) ]
  | EFunc2 (g, a, b) ->
      `Assoc [ ("kind", `String "func2"); ("name", `String (name_of func2_names g));
               ("l", expr_json a); ("r", expr_json b) ]
  | EConv (t, e) ->
      `Assoc [ ("kind", `String "convert"); ("to", `String (etype_name t)); ("e", expr_json e) ]

let program_json (p : program) : Yojson.Safe.t =
  let qualifier = function
    | None -> `Null
    | Some Input -> `String "input"
    | Some Output -> `String "output"
    | Some InOut -> `String "inout"
  in
  let decl d =
    `Assoc [ ("qualifier", qualifier d.dqual); ("name", `String d.dname);
             ("shape", `List (List.map nat_json d.dshape)); ("elem", `String (etype_name d.delem)) ]
  in
  let stmt s = `Assoc [ ("target", `String s.target); ("value", expr_json s.value) ] in
  `Assoc [ ("decls", `List (List.map decl p.decls)); ("stmts", `List (List.map stmt p.stmts)) ]

let answer p : Yojson.Safe.t =
  match check_prog p with
  | Err (r, c) -> `Assoc [ ("decls", `String (code c)); ("rule", `String r) ]
  | Ok rs ->
      let one = function
        | Ok (t, el) ->
            `Assoc [ ("ok", `List (List.map nat_json t)); ("elem", `String (etype_name el)) ]
        | Err (r, c) -> `Assoc [ ("err", `String (code c)); ("rule", `String r) ]
      in
      `Assoc [ ("stmts", `List (List.map one rs)) ]

let core = Array.exists (fun a -> a = "--core") Sys.argv

let () =
  try
    while true do
      let line = input_line stdin in
      let out =
        try
          let p = program (Yojson.Safe.from_string line) in
          if core then program_json (desugar_prog p) else answer p
        with
        | Invalid why -> `Assoc [ ("invalid", `String why) ]
        | Yojson.Json_error why -> `Assoc [ ("invalid", `String why) ]
      in
      print_string (Yojson.Safe.to_string out);
      print_newline ()
    done
  with End_of_file -> ()
