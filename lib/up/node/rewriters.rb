# frozen_string_literal: true

require_relative "rewriters/engine_check"
require_relative "rewriters/file_dir"
require_relative "rewriters/interpolation"
require_relative "rewriters/ivar_names"
require_relative "rewriters/loop_next"
require_relative "rewriters/mutable_strings"
require_relative "rewriters/process_id"
require_relative "rewriters/visibility"

module Up
  module Node
    # The rewriting steps Up::Node::Compiler runs on each file's syntax tree after Opal's own.
    # Each is an Opal::Rewriters::Base (a Parser::AST::Processor), and each is the
    # compile-time half of a fix of an Opal gap; opal/UPSTREAM.md reports the gaps.
    module Rewriters
      ALL = [EngineCheck, IvarNames, ProcessId, Visibility, MutableStrings, LoopNext, Interpolation].freeze
      # The same for code compiled at run time from a String (opal/opal_fixes/parser.rb),
      # whose top level is the body it is evaluated in, not a file's.
      AT_RUN_TIME = [EngineCheck, IvarNames, ProcessId, Visibility::InEval, MutableStrings, LoopNext, Interpolation].freeze
    end
  end
end
