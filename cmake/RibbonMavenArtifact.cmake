# ribbon.jar as the Maven artifact dev.ribbon:ribbon (java/pom.xml), made with the JDK's tools:
# no Maven runs, and no Maven repository need be reachable.
#
# ribbon_jar_meta: a directory whose META-INF/ holds what Maven's jar plugin puts into a jar
#   (LICENSE and NOTICE, maven/dev.ribbon/ribbon/pom.xml and pom.properties), which
#   java/CMakeLists.txt adds to ribbon.jar; ribbon_jar_meta_files lists them.
# ribbon_add_maven_artifact(JAR SOURCES...): ribbon-sources.jar beside JAR, and a Maven
#   repository directory, ribbon_maven_repository, with dev/ribbon/ribbon/VERSION/ holding
#   ribbon-VERSION.jar, ribbon-VERSION-sources.jar and ribbon-VERSION.pom, as `mvn install`
#   lays them out (a file:// repository for Maven or Gradle); ribbon_maven_files lists them.
#   java/tests/check_maven_artifact.py checks it all against `ribbon --version`.
set(ribbon_maven_group dev.ribbon)
set(ribbon_maven_artifact ribbon)
set(ribbon_jar_meta "${CMAKE_CURRENT_BINARY_DIR}/jar-meta")
set(ribbon_pom_meta "${ribbon_jar_meta}/META-INF/maven/${ribbon_maven_group}/${ribbon_maven_artifact}")
# configure_file: a change of LICENSE, NOTICE or the pom configures again and rebuilds the jar.
configure_file("${PROJECT_SOURCE_DIR}/LICENSE" "${ribbon_jar_meta}/META-INF/LICENSE" COPYONLY)
configure_file("${PROJECT_SOURCE_DIR}/NOTICE" "${ribbon_jar_meta}/META-INF/NOTICE" COPYONLY)
configure_file("${PROJECT_SOURCE_DIR}/java/pom.xml" "${ribbon_pom_meta}/pom.xml" COPYONLY)
file(CONFIGURE OUTPUT "${ribbon_pom_meta}/pom.properties"
     CONTENT "artifactId=${ribbon_maven_artifact}\ngroupId=${ribbon_maven_group}\nversion=${PROJECT_VERSION}\n")
set(ribbon_jar_meta_files "${ribbon_jar_meta}/META-INF/LICENSE" "${ribbon_jar_meta}/META-INF/NOTICE"
    "${ribbon_pom_meta}/pom.xml" "${ribbon_pom_meta}/pom.properties")

function(ribbon_add_maven_artifact jar)
  set(sources ${ARGN})
  get_filename_component(jar_dir "${jar}" DIRECTORY)
  set(sources_jar "${jar_dir}/ribbon-sources.jar")
  # Each source file under its package's path: what follows .../java/ (src/main/java/dev/...).
  set(source_args)
  foreach(source IN LISTS sources)
    string(REGEX MATCH "^(.*/java)/(.*)$" matched "${source}")
    list(APPEND source_args -C "${CMAKE_MATCH_1}" "${CMAKE_MATCH_2}")
  endforeach()
  add_custom_command(OUTPUT "${sources_jar}"
                     COMMAND "${CMAKE_COMMAND}" -E rm -f "${sources_jar}"
                     COMMAND "${Java_JAR_EXECUTABLE}" cf "${sources_jar}" -C "${ribbon_jar_meta}"
                             META-INF/LICENSE -C "${ribbon_jar_meta}" META-INF/NOTICE ${source_args}
                     DEPENDS ${sources} ${ribbon_jar_meta_files}
                     COMMENT "ribbon-sources.jar" VERBATIM)

  set(repository "${CMAKE_CURRENT_BINARY_DIR}/maven")
  string(REPLACE "." "/" group_path "${ribbon_maven_group}")
  set(base "${repository}/${group_path}/${ribbon_maven_artifact}/${PROJECT_VERSION}/${ribbon_maven_artifact}-${PROJECT_VERSION}")
  set(files "${base}.jar" "${base}-sources.jar" "${base}.pom")
  add_custom_command(OUTPUT ${files}
                     COMMAND "${CMAKE_COMMAND}" -E copy "${jar}" "${base}.jar"
                     COMMAND "${CMAKE_COMMAND}" -E copy "${sources_jar}" "${base}-sources.jar"
                     COMMAND "${CMAKE_COMMAND}" -E copy "${ribbon_pom_meta}/pom.xml" "${base}.pom"
                     DEPENDS "${jar}" "${sources_jar}" "${ribbon_pom_meta}/pom.xml"
                     COMMENT "The Maven repository of dev.ribbon:ribbon:${PROJECT_VERSION}" VERBATIM)
  set(ribbon_maven_repository "${repository}" PARENT_SCOPE)
  set(ribbon_maven_files ${files} PARENT_SCOPE)
endfunction()
