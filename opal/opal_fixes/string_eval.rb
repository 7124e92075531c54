# frozen_string_literal: true
# backtick_javascript: true

# Ruby code in a String (`class_eval("def x() 1; end")`, `instance_eval(str)`, `eval`)
# needs Opal's parser and compiler at run time: 2.3 MB of JavaScript that an app without
# such code should not carry. A build that finds a String eval in the app's files
# (Up::Node::Compiler) writes them beside the bundle, as <bundle>.parser.js
# (opal/opal_fixes/parser.rb), and a String eval loads that file when it first needs it.
# Without the file, a String eval raises NotImplementedError that says why.
#
# What class_eval and instance_eval compile is kept beside the bundle too, in
# <bundle>.evals.json, and read back by the next start: an app evaluates the same Strings
# at every start (Sinatra defines its settings so, Tilt compiles each template), so a warm
# start compiles none of them and loads no parser. The file belongs to one parser file (its
# size and time are stamped in it); a build removes it.
#
# Opal's corelib has the same idea for its REPL (corelib/irb.rb: Opal.compile and
# Opal.eval call Opal.load_parser first); that hook loads the parser file too.
%x{
  var up_base = typeof __filename === 'string' ? __filename.replace(/\.js$/, '') : null;
  var up_evals = null, up_stamp = null, up_flush = false;
  var UP_EVALS_KEPT = 10000;

  Opal.up_load_parser = function() {
    if (Opal.up_parser_loaded) return;
    if (up_base === null || !require('fs').existsSync(up_base + '.parser.js')) {
      #{::Kernel.raise ::NotImplementedError,
                       "evaluating Ruby code in a String needs Opal's parser, which this build left out " \
                       '(it found no class_eval, instance_eval or eval of a String in the compiled files)'}
    }
    require(up_base + '.parser.js');
    Opal.up_parser_loaded = true;
  };
  Opal.load_parser = Opal.up_load_parser;

  function up_parser_stamp() {
    try {
      var stat = require('fs').statSync(up_base + '.parser.js');
      return stat.size + ':' + stat.mtimeMs;
    } catch (e) { return null; }
  }

  function up_read_evals() {
    up_evals = new Map();
    if (up_base === null) return;
    up_stamp = up_parser_stamp();
    try {
      var kept = JSON.parse(require('fs').readFileSync(up_base + '.evals.json', 'utf8'));
      if (kept.stamp === up_stamp) up_evals = new Map(kept.evals);
    } catch (e) { /* none yet, or unreadable: compiled again */ }
  }

  function up_write_evals() {
    up_flush = false;
    try {
      var path = up_base + '.evals.json', tmp = path + '.' + process.pid + '.tmp';
      require('fs').writeFileSync(tmp, JSON.stringify({ stamp: up_stamp, evals: Array.from(up_evals) }));
      require('fs').renameSync(tmp, path);
    } catch (e) { /* a read-only directory: compiled again next time */ }
  }

  // The JS that Opal compiles code (evaluated with file's name) to, from the file when it
  // has it.
  Opal.up_compile_eval = function(code, file) {
    if (up_evals === null) up_read_evals();
    var key = file + '\0' + code, compiled = up_evals.get(key);
    if (compiled !== undefined) return compiled;

    Opal.up_load_parser();
    compiled = #{::Kernel.__up_compile(`code`, `file`)};
    if (up_evals.size < UP_EVALS_KEPT) {
      up_evals.set(key, compiled);
      if (!up_flush && up_base !== null && up_stamp !== null) {
        up_flush = true;
        setImmediate(up_write_evals);
      }
    }
    return compiled;
  };
}

module Kernel
  # code compiled by Opal's parser as class_eval and instance_eval compile it. Code that
  # does not parse raises SyntaxError, as in MRI (Opal's compiler raised its own
  # Opal::SyntaxError).
  def self.__up_compile(code, file)
    ::Opal.compile(code, __OPAL_COMPILER_CONFIG__.merge(file: file, eval: true))
  rescue ::Exception => e # rubocop:disable Lint/RescueException
    ::Kernel.raise e unless e.class.name == 'Opal::SyntaxError'

    ::Kernel.raise ::SyntaxError, e.message
  end

  # A block that runs code (from a String) with the self it is called with.
  def self.__up_eval_block(code, file)
    compiled = `Opal.up_compile_eval(#{::Opal.coerce_to!(code, ::String, :to_str)}, #{(file || '(eval)').to_s})`
    ::Kernel.proc { `new Function("Opal,self", "return " + compiled)(Opal, self)` }
  end
end

# A method that returns a literal (`class_eval("def port() 4567; end")`, the way Sinatra
# defines each setting) is defined without compiling: Sinatra's default session secret is
# random, so that one String differed at every start, and was the only thing that loaded the
# parser on a warm start. Only literals read back exactly are taken so: nil, true, false,
# integers, simple symbols, and double-quoted strings with the escapes inspect writes for
# ASCII text.
module Kernel
  LITERAL_METHOD = /\A\s*def ([a-z_][A-Za-z0-9_]*[?!]?)\(\) (nil|true|false|-?[0-9]+|:[a-z_][A-Za-z0-9_]*|"(?:[^"\\#]|\\[\\"nt#])*"); end\s*\z/
  STRING_ESCAPES = { '\\' => '\\', '"' => '"', 'n' => "\n", 't' => "\t", '#' => '#' }.freeze

  # [name, value] when code only defines a method that returns a literal, else nil.
  def self.__up_literal_method(code)
    name, literal = code.match(LITERAL_METHOD)&.captures
    return nil unless name

    value = case literal
            when 'nil' then nil
            when 'true' then true
            when 'false' then false
            when /\A:/ then literal[1..]
            when /\A"/ then literal[1...-1].gsub(/\\(.)/) { STRING_ESCAPES.fetch(::Regexp.last_match(1)) }
            else literal.to_i
            end
    [name, value]
  end
end

class Module
  alias __opal_module_eval module_eval

  def module_eval(*args, &block)
    return __opal_module_eval(*args, &block) unless block.nil? && !args.empty?

    name, value = ::Kernel.__up_literal_method(args[0]) if ::String === args[0]
    return define_method(name) { value } if name

    __opal_module_eval(&::Kernel.__up_eval_block(args[0], args[1]))
  end

  alias class_eval module_eval
end

class BasicObject
  alias __opal_instance_eval instance_eval

  # (An instance variable's name alone is read without compiling, as Opal does.)
  def instance_eval(*args, &block)
    return __opal_instance_eval(*args, &block) unless block.nil? && !args.empty?
    return instance_variable_get(args.first) if ::String === args.first && args.first.match?(/\A@\w+\z/)

    __opal_instance_eval(&::Kernel.__up_eval_block(args[0], args[1]))
  end
end

module Kernel
  # Opal's parser defines Kernel#eval when it loads, in place of this one. (A call written
  # `eval(...)` is compiled by Opal to call Opal.compile in place, which loads the parser
  # through Opal.load_parser; this is for `send(:eval, ...)` and the like.)
  def eval(*args)
    `Opal.up_load_parser()`
    __send__(:eval, *args)
  end
end
