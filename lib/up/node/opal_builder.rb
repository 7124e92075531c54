# frozen_string_literal: true

require "opal"
require "opal/builder_scheduler/sequential"
require_relative "ruby_processor"
require_relative "rackup_processor"

module Up
  module Node
    # Makes the Opal::Builder every UP! build uses: the up_node bundle (Up::Node::Bundle) and
    # the Opal tests (test/opal/helper.rb), so that both compile Ruby the same way. It owns
    # nothing; each build gets a builder of its own.
    module OpalBuilder
      # Our opal/ directory: first on the load path, so shims named like stdlib files (uri.rb)
      # shadow Opal's stubs.
      OPAL_DIR = File.expand_path("../../../opal", __dir__)
      # Built before anything else, each as its own unit and in this order: Opal's corelib;
      # the fixes of Opal's own gaps (opal/opal_fixes.rb), which must run before any file
      # they fix is loaded; the Rack shims (opal/rack_compat.rb), which replace Opal.regexp
      # that every later file binds when it loads.
      PRELUDE = %w[opal opal_fixes rack_compat].freeze

      module_function

      # Where a build looks for a require: OPAL_DIR, Opal's own paths, then paths.
      def load_path(paths)
        [OPAL_DIR, *Opal.paths, *paths]
      end

      # load_path: in its order, as load_path makes it.
      #
      # Sequential: Opal's default scheduler compiles in forked children, and when one of
      # them hits a syntax error the parent fails with "closed stream" instead of the error.
      # Our own path reader: Builder#append_paths would put the paths after Opal's stdlib,
      # where the shims could not shadow it. Our processors come first, so every Ruby file
      # is compiled by Up::Node::Compiler.
      def create(load_path)
        Opal::Builder.new(path_reader: Opal::PathReader.new(load_path, extensions),
                          scheduler: Opal::BuilderScheduler::Sequential,
                          processors: [RubyProcessor, RackupProcessor, *Opal::Builder.processors])
      end

      def extensions
        Opal::Builder.extensions.flat_map { |ext| [".#{ext}", ".js.#{ext}"] }
      end
    end
  end
end
