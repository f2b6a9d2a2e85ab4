package io.clearflow.registry;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import java.util.List;
import javax.enterprise.inject.Produces;
import javax.inject.Singleton;

/**
 * The registry's list of settings that can be changed at run time through its admin API, which Apicurio's
 * config-index build step would have produced (that step is not published on Maven Central).
 *
 * <p>Empty: every setting keeps the value it starts with (system properties, environment, the application's
 * defaults), which is all the local stack needs.
 */
public class StaticConfigProperties {
    @Produces
    @Singleton
    DynamicConfigPropertyList dynamicConfigProperties() {
        return new DynamicConfigPropertyList(List.of());
    }
}
