# frozen_string_literal: true
# backtick_javascript: true

# Ruby code in a String (`class_eval("def x() 1; end")`, `instance_eval(str)`, `eval`)
# needs Opal's parser and compiler at run time: 2.3 MB of JavaScript that an app without
# such code should not carry. A build that finds a String eval in the app's files
# (Up::Node::Compiler) writes them beside the bundle, as <bundle>.parser.js
# (opal/opal_fixes/parser.rb), and the first String eval loads that file; every later one
# goes straight to Opal's own methods, which it defines. Without the file, a String eval
# raises NotImplementedError that says why.
#
# Opal's corelib has the same idea for its REPL (corelib/irb.rb: Opal.compile and
# Opal.eval call Opal.load_parser first); that hook loads this file too.
%x{
  Opal.up_load_parser = function() {
    if (Opal.up_parser_loaded) return;
    var path = typeof __filename === 'string' ? __filename.replace(/\.js$/, '') + '.parser.js' : null;
    if (path === null || !require('fs').existsSync(path)) {
      #{::Kernel.raise ::NotImplementedError,
                       "evaluating Ruby code in a String needs Opal's parser, which this build left out " \
                       '(it found no class_eval, instance_eval or eval of a String in the compiled files)'}
    }
    require(path);
    Opal.up_parser_loaded = true;
  };
  Opal.load_parser = Opal.up_load_parser;
}

# Code that does not parse raises SyntaxError, as in MRI (Opal's compiler raised its own
# Opal::SyntaxError from class_eval and instance_eval).
module Kernel
  def __up_syntax_errors
    yield
  rescue ::Exception => e # rubocop:disable Lint/RescueException
    ::Kernel.raise e unless e.class.name == 'Opal::SyntaxError'

    ::Kernel.raise ::SyntaxError, e.message
  end
end

class Module
  alias __opal_module_eval module_eval

  def module_eval(*args, &block)
    return __opal_module_eval(*args, &block) unless block.nil? && !args.empty?

    `Opal.up_load_parser()`
    __up_syntax_errors { __opal_module_eval(*args) }
  end

  alias class_eval module_eval
end

class BasicObject
  alias __opal_instance_eval instance_eval

  def instance_eval(*args, &block)
    if block.nil? && !args.empty? && !(::String === args.first && args.first.match?(/\A@\w+\z/))
      `Opal.up_load_parser()`
      return ::Kernel.instance_method(:__up_syntax_errors).bind_call(self) { __opal_instance_eval(*args) }
    end
    __opal_instance_eval(*args, &block)
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
