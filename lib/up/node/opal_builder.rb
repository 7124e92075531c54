# frozen_string_literal: true

require "opal"
require_relative "builder_scheduler"
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
      # Our lib/: on the bundle's load path (UP!'s Ruby that runs on both runtimes, such as
      # lib/up/pub_sub.rb) and on the parser file's, for the rewriters it carries.
      LIB_DIR = File.expand_path("../..", __dir__)
      # Built before anything else, each as its own unit and in this order: Opal's corelib;
      # the fixes of Opal's own gaps (opal/opal_fixes.rb), which must run before any file
      # they fix is loaded; the Rack shims (opal/rack_compat.rb), which replace Opal.regexp
      # that every later file binds when it loads.
      PRELUDE = %w[opal opal_fixes rack_compat].freeze

      module_function

      # Builds PRELUDE into builder. Opal's corelib and what it loads (lib/opal/regexp_anchors,
      # outside the corelib's directory) are compiled without Up::Node::Compiler's rewriting,
      # whose output calls opal_fixes, which they load before.
      def build_prelude(builder)
        builder.build(PRELUDE.first, up_bootstrap: true)
        PRELUDE.drop(1).each { |unit| builder.build(unit) }
        builder
      end

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
                          scheduler: BuilderScheduler,
                          processors: [RubyProcessor, RackupProcessor, *Opal::Builder.processors])
      end

      # Files whose String evals do not count, as every bundle has them and they run only
      # when called: our own fixes only pass them on; our erb.rb (loaded for Rack's error
      # pages) evaluates in ERB#result; Rack::Builder's are in parse_file, load_file and
      # new_from_string, which read a config.ru at run time, as up_node does when it builds
      # instead. (They work if something else brought the parser in.)
      EVALS_NOT_COUNTED = [%r{/opal/opal_fixes/[^/]+\.rb\z}, %r{/opal/erb\.rb\z}, %r{/rack/builder\.rb\z}].freeze

      # True when a file compiled by builder evaluates Ruby code in a String, so that the
      # bundle needs Opal's parser beside it.
      def string_eval?(builder)
        builder.processed.any? do |asset|
          EVALS_NOT_COUNTED.none? { |pattern| asset.abs_path.to_s.match?(pattern) } && asset.respond_to?(:compiled) &&
            asset.compiled.respond_to?(:string_eval?) && asset.compiled.string_eval?
        end
      end

      # A builder of Opal's parser and compiler, for the file opal/opal_fixes/string_eval.rb
      # loads beside the bundle that main built: it leaves out what that bundle has already.
      # load_path: main's. The caller writes its to_s to parser_path(the bundle's path), and
      # no source map (Up::Node::Compiler#marshal_dump).
      def parser(main, load_path)
        builder = after(main, [*load_path, LIB_DIR])
        builder.build("opal_fixes/parser", up_no_source_map: true)
        builder
      end

      # A builder for files that load after the bundle main built: it leaves out what main
      # has already.
      def after(main, load_path)
        builder = create(load_path)
        built = main.processed.map { |asset| asset.filename.sub(%r{\A\./}, "").sub(/\.(?:rb|opal|js)\z/, "") }
        builder.prerequired = [*main.already_processed, *built].uniq
        builder
      end

      # Where the parser file of the bundle at path goes: where string_eval.rb looks for it.
      def parser_path(path)
        "#{path.delete_suffix(".js")}.parser.js"
      end

      def extensions
        Opal::Builder.extensions.flat_map { |ext| [".#{ext}", ".js.#{ext}"] }
      end
    end
  end
end
