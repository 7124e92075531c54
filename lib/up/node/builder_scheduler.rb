# frozen_string_literal: true

require "opal/builder_scheduler/sequential"

module Up
  module Node
    # Opal's sequential scheduler (see Up::Node::OpalBuilder.create for why sequential), but
    # an optional require (one of the file's autoloads: Up::Node::OptionalRequires) that
    # cannot be built because a file *it* requires is missing is left out, as a missing
    # optional file already is: the require raises LoadError when it runs, as on MRI. Roda's
    # render plugin requires tilt/erubi only when asked to escape, and tilt/erubi requires
    # the erubi gem: without erubi, Opal stopped the build of every app using render.
    class BuilderScheduler < Opal::BuilderScheduler::Sequential
      def process_requires(rel_path, requires, autoloads, options)
        requires.map do |name|
          builder.process_require(name, autoloads, options)
        rescue Opal::Builder::MissingRequire
          raise unless autoloads.include?(name)
        end
      rescue Opal::Builder::MissingRequire => e
        raise e, "A file required by #{rel_path.inspect} wasn't found.\n#{e.message}", e.backtrace
      end
    end
  end
end
